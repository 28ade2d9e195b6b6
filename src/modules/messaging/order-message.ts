import { isPositiveInt, ORDER_NO, parseVersionedObject } from './message-payload.js';

/** An accepted purchase on its way to becoming an order row. */
export interface NewOrder {
  requestId: string;
  orderNo: string;
  userId: number;
  goodsId: number;
  quantity: number;
  /** When Redis accepted the purchase (epoch ms); the payment deadline counts from here. */
  acceptedAt: number;
  /**
   * The purchase's trace (W3C `traceparent`), as its message's headers carried it: never in the
   * message body, set by the consumer so that the order's payment timeout can link to it.
   */
  trace?: string;
}

/** Wire format of the order message (JSON). `v` lets a later format coexist during a deploy. */
export interface OrderMessageV1 extends NewOrder {
  v: 1;
}

/** The purchase route's own ceiling (per-user limits are at most 1,000). */
const MAX_QUANTITY = 1_000;
const EARLIEST_ACCEPTED_AT = Date.UTC(2020, 0, 1);

export function encodeOrderMessage(order: NewOrder): string {
  const message: OrderMessageV1 = { v: 1, ...order };
  return JSON.stringify(message);
}

const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Returns the order, or a reason why the payload is not one (it then goes to the DLQ). */
export function parseOrderMessage(content: Buffer | string): NewOrder | string {
  const message = parseVersionedObject(content);
  if (typeof message === 'string') return message;
  if (typeof message.requestId !== 'string' || !REQUEST_ID.test(message.requestId)) {
    return 'requestId is not a UUID';
  }
  if (typeof message.orderNo !== 'string' || !ORDER_NO.test(message.orderNo)) {
    return 'orderNo is malformed';
  }
  for (const field of ['userId', 'goodsId', 'quantity', 'acceptedAt'] as const) {
    if (!isPositiveInt(message[field])) return `${field} is not a positive integer`;
  }
  // Within what the columns hold: a message MySQL would refuse on every try must go to the
  // dead-letter queue, not stall the consumer's retries.
  if ((message.quantity as number) > MAX_QUANTITY) return `quantity is above ${MAX_QUANTITY}`;
  const acceptedAt = message.acceptedAt as number;
  if (acceptedAt < EARLIEST_ACCEPTED_AT || acceptedAt > Date.now() + 86_400_000) {
    return 'acceptedAt is not a plausible time';
  }
  return {
    requestId: message.requestId,
    orderNo: message.orderNo,
    userId: message.userId as number,
    goodsId: message.goodsId as number,
    quantity: message.quantity as number,
    acceptedAt: message.acceptedAt as number,
  };
}

/**
 * The AMQP `type` of an order barrier's message (see RedisBarrierStore), which shares the orders queue
 * with the order messages and is told apart by it before any parsing.
 */
export const BARRIER_MESSAGE_TYPE = 'seckill.order-barrier';

/** The barrier id a barrier message carries, or null when the body is not one. */
export function parseBarrierMessage(content: Buffer): string | null {
  try {
    const body = JSON.parse(content.toString('utf8')) as { barrier?: unknown };
    return typeof body.barrier === 'string' && /^[0-9a-f]{1,64}$/.test(body.barrier)
      ? body.barrier
      : null;
  } catch {
    return null;
  }
}
