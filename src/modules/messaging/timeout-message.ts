/** The payment-timeout message: which order to expire once its delay has passed. */
export interface OrderTimeoutMessage {
  v: 1;
  orderNo: string;
  goodsId: number;
}

const ORDER_NO = /^[A-Z0-9]{8,32}$/;

export function encodeTimeoutMessage(orderNo: string, goodsId: number): string {
  const message: OrderTimeoutMessage = { v: 1, orderNo, goodsId };
  return JSON.stringify(message);
}

/** Returns the message, or why it is not one (it then goes to the dead-letter queue). */
export function parseTimeoutMessage(content: Buffer | string): OrderTimeoutMessage | string {
  let raw: unknown;
  try {
    raw = JSON.parse(typeof content === 'string' ? content : content.toString('utf8'));
  } catch {
    return 'payload is not JSON';
  }
  if (typeof raw !== 'object' || raw === null) return 'payload is not an object';
  const message = raw as Record<string, unknown>;
  if (message.v !== 1) return `unknown message version ${String(message.v)}`;
  if (typeof message.orderNo !== 'string' || !ORDER_NO.test(message.orderNo)) {
    return 'orderNo is malformed';
  }
  if (
    typeof message.goodsId !== 'number' ||
    !Number.isSafeInteger(message.goodsId) ||
    message.goodsId < 1
  ) {
    return 'goodsId is not a positive integer';
  }
  return { v: 1, orderNo: message.orderNo, goodsId: message.goodsId };
}
