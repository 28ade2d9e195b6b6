/**
 * What a shop may hear of one order, in order (docs/payments.md, "Order events"): created, then
 * one way out of PENDING_PAYMENT, then, after a cancel, maybe a late payment's outcome. The
 * checker and the tests judge the events a shop received against these.
 */
export const ORDER_EVENT_PATHS: ReadonlySet<string> = new Set([
  'order.created',
  'order.created order.paid',
  'order.created order.cancelled',
  'order.created order.expired',
  'order.created order.cancelled order.paid',
  'order.created order.expired order.paid',
  'order.created order.cancelled order.refund_required',
  'order.created order.expired order.refund_required',
]);

/** The events an order's last one may be, by the order's status. */
export const LAST_ORDER_EVENT: Readonly<Record<string, readonly string[]>> = {
  PENDING_PAYMENT: ['order.created'],
  PAID: ['order.paid'],
  CANCELLED: ['order.cancelled', 'order.expired'],
  REFUND_REQUIRED: ['order.refund_required'],
};
