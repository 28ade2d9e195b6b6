import { isPositiveInt, ORDER_NO, parseVersionedObject } from './message-payload.js';

/** The payment-timeout message: which order to expire once its delay has passed. */
export interface OrderTimeoutMessage {
  v: 1;
  orderNo: string;
  goodsId: number;
}

export function encodeTimeoutMessage(orderNo: string, goodsId: number): string {
  const message: OrderTimeoutMessage = { v: 1, orderNo, goodsId };
  return JSON.stringify(message);
}

/** Returns the message, or why it is not one (it then goes to the dead-letter queue). */
export function parseTimeoutMessage(content: Buffer | string): OrderTimeoutMessage | string {
  const message = parseVersionedObject(content);
  if (typeof message === 'string') return message;
  if (typeof message.orderNo !== 'string' || !ORDER_NO.test(message.orderNo)) {
    return 'orderNo is malformed';
  }
  if (!isPositiveInt(message.goodsId)) return 'goodsId is not a positive integer';
  return { v: 1, orderNo: message.orderNo, goodsId: message.goodsId };
}
