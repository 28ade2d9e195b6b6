import { DomainError, UnavailableError, type ErrorCode } from '../../common/errors/domain-error.js';
import { DeductCode } from './ledger.scripts.js';

/**
 * The contract error for a deduct script's refusal, or null for NOT_PREHEATED (and any code
 * this build does not know), which the caller must tell apart from an unknown goods or a closed
 * window by asking MySQL.
 */
export function deductRefusal(code: DeductCode): DomainError | null {
  switch (code) {
    case DeductCode.SaleNotStarted:
      return new DomainError('SALE_NOT_STARTED', 'The sale has not started yet');
    case DeductCode.SaleEnded:
      return new DomainError('SALE_ENDED', 'The sale has ended');
    case DeductCode.SoldOut:
      return new DomainError('SOLD_OUT', 'Sold out');
    case DeductCode.AlreadyPurchased:
      return new DomainError('ALREADY_PURCHASED', 'You already hold this goods');
    case DeductCode.Voided:
      return new UnavailableError('This purchase attempt was given up; nothing was taken');
    case DeductCode.Frozen:
      return new UnavailableError('The sale is being repaired; nothing was taken');
    case DeductCode.NotAdmitted:
      return new DomainError(
        'NOT_ADMITTED',
        'The waiting room has not admitted you, or your admission expired: join the queue (POST /api/v1/seckill/:goodsId/queue)',
      );
    case DeductCode.NotSelected:
      return new DomainError(
        'NOT_SELECTED',
        'You hold no purchase right in force in this draw (GET /api/v1/seckill/:goodsId/entry)',
      );
    case DeductCode.OverLimit:
      return new DomainError('VALIDATION_FAILED', 'quantity is above the per-user limit');
    default:
      return null;
  }
}

/**
 * Refusals that are the final answer to a purchase: asking again gets the same. Anything else
 * (a 503, a lock held by a concurrent click, a sale not open yet, a bad token or quantity) may
 * go differently next time, so it neither spends a purchase token nor is replayed to a retry
 * carrying the same Idempotency-Key.
 */
const FINAL_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'SOLD_OUT',
  'ALREADY_PURCHASED',
  'SALE_ENDED',
]);

export function isFinalRefusal(error: unknown): error is DomainError {
  return error instanceof DomainError && FINAL_REFUSALS.has(error.code);
}
