import { isPositiveInt, ORDER_NO, parseVersionedObject } from './message-payload.js';

/** One order whose payment deadline a timeout message stands for. */
export interface OrderTimeout {
  orderNo: string;
  goodsId: number;
  /** The purchase's trace (W3C `traceparent`), when it was traced: the expiry links to it. */
  trace?: string;
}

/** A W3C `traceparent` (version 00): what a timeout's `trace` may hold. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The payment-timeout message (JSON): the orders of one written batch, to expire once their
 * delay has passed. One message per batch rather than per order: each confirmed publish costs
 * the broker what a purchase's own publish costs, and slowed the purchases' confirms.
 */
export interface OrderTimeoutMessageV2 {
  v: 2;
  orders: OrderTimeout[];
}

/**
 * The most orders one message carries (about 55 KB), so that the timeout consumer's work on one
 * message stays short; a larger batch (CONSUMER_BATCH_SIZE goes up to 5,000) is sent in several.
 */
export const MAX_TIMEOUTS_PER_MESSAGE = 1_000;

export function encodeTimeoutMessage(orders: OrderTimeout[]): string {
  const message: OrderTimeoutMessageV2 = {
    v: 2,
    orders: orders.map(({ orderNo, goodsId, trace }) =>
      trace === undefined ? { orderNo, goodsId } : { orderNo, goodsId, trace },
    ),
  };
  return JSON.stringify(message);
}

/**
 * The orders a message names, each once; or why it is not a timeout message (it then goes to
 * the dead-letter queue). Version 1 (`{v: 1, orderNo, goodsId}`, one order) is still read:
 * a rolling upgrade finds such messages waiting in the delay queue.
 */
export function parseTimeoutMessage(content: Buffer | string): OrderTimeout[] | string {
  const message = parseVersionedObject(content, [1, 2]);
  if (typeof message === 'string') return message;
  if (message.v === 1) {
    const order = parseOrderTimeout(message);
    return typeof order === 'string' ? order : [order];
  }
  const entries = message.orders;
  if (!Array.isArray(entries)) return 'orders is not a list';
  if (entries.length === 0) return 'orders is empty';
  if (entries.length > MAX_TIMEOUTS_PER_MESSAGE) {
    return `orders has more than ${MAX_TIMEOUTS_PER_MESSAGE} entries`;
  }
  // An order named twice is expired and counted once.
  const orders = new Map<string, OrderTimeout>();
  for (const [index, entry] of entries.entries()) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      return `orders[${index}] is not an object`;
    }
    const order = parseOrderTimeout(entry as Record<string, unknown>);
    if (typeof order === 'string') return `orders[${index}]: ${order}`;
    if (!orders.has(order.orderNo)) orders.set(order.orderNo, order);
  }
  return [...orders.values()];
}

function parseOrderTimeout(fields: Record<string, unknown>): OrderTimeout | string {
  if (typeof fields.orderNo !== 'string' || !ORDER_NO.test(fields.orderNo)) {
    return 'orderNo is malformed';
  }
  if (!isPositiveInt(fields.goodsId)) return 'goodsId is not a positive integer';
  if (fields.trace === undefined) return { orderNo: fields.orderNo, goodsId: fields.goodsId };
  if (typeof fields.trace !== 'string' || !TRACEPARENT.test(fields.trace)) {
    return 'trace is not a traceparent';
  }
  return { orderNo: fields.orderNo, goodsId: fields.goodsId, trace: fields.trace };
}
