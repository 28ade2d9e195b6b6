import type { OrderStatus } from '../../infra/database/entities/order.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';

/**
 * What a payment event did to its order: `paid` (before its deadline), `retaken` (paid after its
 * cancel, its unit taken again), `refund_required` (paid after its cancel, no unit left),
 * `extended` (its deadline moved by the grace), `unchanged` (nothing to do: paid already, a
 * failure, a second `payment.started`).
 */
export type PaymentOutcome = 'paid' | 'retaken' | 'refund_required' | 'extended' | 'unchanged';

export interface PaymentResult {
  status: OrderStatus;
  outcome: PaymentOutcome;
}

/**
 * The payment event's own record, written in the transaction of the change it made: if it
 * throws (the event was recorded meanwhile by a duplicate delivery), the change is undone.
 */
export type RecordPayment = (tx: Tx, result: PaymentResult) => Promise<void>;
