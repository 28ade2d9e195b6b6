import { DomainError, type ErrorCode } from '../../common/errors/domain-error.js';
import type { PurchaseAccepted } from './purchase.types.js';

export const IDEMPOTENCY_KEY_SHAPE = /^[A-Za-z0-9_-]{1,64}$/;

/** The optional Idempotency-Key header: absent, or 1–64 of [A-Za-z0-9_-]. */
export function parseIdempotencyKey(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !IDEMPOTENCY_KEY_SHAPE.test(value)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      'Idempotency-Key must be 1 to 64 characters of A-Z, a-z, 0-9, "_" and "-"',
    );
  }
  return value;
}

/** What an Idempotency-Key holds in Redis (see lua/idempotency-reserve.lua). */
export type IdempotencyRecord =
  | { state: 'PENDING'; goodsId: number; quantity: number; owner: string }
  | { state: 'DONE'; goodsId: number; quantity: number; status: 202; body: PurchaseAccepted }
  | {
      state: 'DONE';
      goodsId: number;
      quantity: number;
      status: 409;
      code: ErrorCode;
      message: string;
    };

/** The answer a retry carrying the same key gets, from what the key holds. */
export function replay(
  record: IdempotencyRecord,
  goodsId: number,
  quantity: number,
): PurchaseAccepted {
  if (record.goodsId !== goodsId || record.quantity !== quantity) {
    throw new DomainError(
      'VALIDATION_FAILED',
      'This Idempotency-Key was already used for a different purchase (another goods or quantity)',
    );
  }
  if (record.state === 'PENDING') {
    throw new DomainError(
      'DUPLICATE_REQUEST',
      'A purchase with this Idempotency-Key is in progress; retry shortly for its answer',
    );
  }
  if (record.status === 202) return record.body;
  throw new DomainError(record.code, record.message);
}
