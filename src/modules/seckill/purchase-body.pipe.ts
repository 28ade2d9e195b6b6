import { Injectable, PipeTransform } from '@nestjs/common';
import { DomainError, echoed } from '../../common/errors/domain-error.js';

const MAX_QUANTITY = 1_000;

/** `{"quantity": 1000}` is 18 bytes: anything near this limit is not a purchase. */
export const PURCHASE_BODY_LIMIT_BYTES = 1_024;

/**
 * The purchase body is empty or `{quantity}`. Checked by hand rather than by class-validator:
 * this is the hottest route, and anything else in the body (a `userId`, say) is refused.
 */
@Injectable()
export class PurchaseBodyPipe implements PipeTransform<unknown, number> {
  transform(body: unknown): number {
    if (body === undefined || body === null || body === '') return 1;
    if (typeof body !== 'object' || Array.isArray(body)) {
      throw new DomainError('VALIDATION_FAILED', 'The body must be a JSON object');
    }
    const fields = Object.keys(body);
    const unknown = fields.filter((field) => field !== 'quantity');
    if (unknown.length > 0) {
      throw new DomainError('VALIDATION_FAILED', `Unknown field(s): ${echoed(unknown.join(', '))}`);
    }
    const { quantity } = body as { quantity?: unknown };
    if (quantity === undefined) return 1;
    if (
      typeof quantity !== 'number' ||
      !Number.isInteger(quantity) ||
      quantity < 1 ||
      quantity > MAX_QUANTITY
    ) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `quantity must be an integer between 1 and ${MAX_QUANTITY}`,
      );
    }
    return quantity;
  }
}
