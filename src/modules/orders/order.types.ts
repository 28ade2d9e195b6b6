import type { NewOrder } from '../messaging/order-message.js';

export type RejectReason = 'SOLD_OUT' | 'ALREADY_PURCHASED' | 'GOODS_NOT_FOUND';

/** `voided`: the purchase's void is recorded in MySQL (VoidedRequestsService): no order, ever. */
export type WriteOutcome =
  | { kind: 'written'; order: NewOrder }
  | { kind: 'duplicate'; order: NewOrder }
  | { kind: 'rejected'; order: NewOrder; reason: RejectReason }
  | { kind: 'voided'; order: NewOrder };
