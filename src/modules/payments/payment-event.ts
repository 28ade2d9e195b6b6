import { DomainError } from '../../common/errors/domain-error.js';

export const PAYMENT_EVENT_TYPES = [
  'payment.started',
  'payment.succeeded',
  'payment.failed',
] as const;
export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

/** A provider's event, as the webhook takes it (the contract's body; other fields are ignored). */
export interface PaymentEvent {
  id: string;
  type: PaymentEventType;
  data: { orderNo: string; amount: number; currency: string };
}

const EVENT_ID = /^[A-Za-z0-9_.:-]{1,64}$/;
const ORDER_NO = /^[A-Za-z0-9]{1,32}$/;
const CURRENCY = /^[A-Z]{3}$/;

function invalid(message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads a provider event out of a parsed body, or throws VALIDATION_FAILED naming the field.
 * Fields it does not know are left alone: providers add some over time.
 */
export function readPaymentEvent(body: unknown): PaymentEvent {
  if (!isObject(body)) throw invalid('The body must be a JSON object');
  const { id, type, data } = body;
  if (typeof id !== 'string' || !EVENT_ID.test(id)) {
    throw invalid('id must be 1 to 64 letters, digits or _.:-');
  }
  if (typeof type !== 'string' || !(PAYMENT_EVENT_TYPES as readonly string[]).includes(type)) {
    throw invalid(`type must be one of ${PAYMENT_EVENT_TYPES.join(', ')}`);
  }
  if (!isObject(data)) throw invalid('data must be an object');
  const { orderNo, amount, currency } = data;
  if (typeof orderNo !== 'string' || !ORDER_NO.test(orderNo)) {
    throw invalid('data.orderNo must be an order number');
  }
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 0) {
    throw invalid('data.amount must be a non-negative integer (minor units)');
  }
  if (typeof currency !== 'string' || !CURRENCY.test(currency)) {
    throw invalid('data.currency must be an ISO 4217 code');
  }
  return { id, type: type as PaymentEventType, data: { orderNo, amount, currency } };
}

/**
 * A price of the catalogue (DECIMAL(12, 2), as MySQL returns it: "199.00") times a quantity, in
 * minor units, exactly: no binary floating point on money.
 */
export function amountInMinorUnits(price: string, quantity: number): number {
  const match = /^(\d+)(?:\.(\d{1,2}))?$/.exec(price.trim());
  if (!match) throw new Error(`not a price: ${price}`);
  const minor = Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
  return minor * quantity;
}
