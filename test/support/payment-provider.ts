import { randomUUID } from 'node:crypto';
import type TestAgent from 'supertest/lib/agent.js';
import { signatureHeader } from '../../src/common/webhook-signature.js';
import { bearer, waitFor, type Stores } from './harness.js';

/** The provider's signing secret the payment tests give the app (PAYMENT_WEBHOOK_SECRET). */
export const PAYMENT_SECRET = 'whsec_test_0123456789abcdef';

/** createSale's price (999.99), in minor units. */
export const UNIT_AMOUNT = 99_999;

export interface ProviderEvent {
  id: string;
  type: 'payment.started' | 'payment.succeeded' | 'payment.failed';
  data: { orderNo: string; amount: number; currency: string };
}

/** An event for one unit of `orderNo`, in CNY, with a fresh id unless given one. */
export function paymentEvent(
  type: ProviderEvent['type'],
  orderNo: string,
  overrides: { id?: string; amount?: number; currency?: string; quantity?: number } = {},
): ProviderEvent {
  return {
    id: overrides.id ?? `evt_${randomUUID()}`,
    type,
    data: {
      orderNo,
      amount: overrides.amount ?? UNIT_AMOUNT * (overrides.quantity ?? 1),
      currency: overrides.currency ?? 'CNY',
    },
  };
}

/** Buys one unit as `userId` and waits for its order, pending payment; returns its number. */
export async function buyPending(
  http: TestAgent,
  stores: Stores,
  goodsId: number,
  userId: number,
): Promise<string> {
  await http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId)).expect(202);
  return waitFor(
    async () =>
      (await stores.orders(goodsId)).find(
        (row) => Number(row.user_id) === userId && row.status === 'PENDING_PAYMENT',
      )?.order_no,
    { what: `the order of user ${userId}` },
  );
}

/** Posts `event` to the webhook as the provider would: its JSON, signed at `at` (seconds). */
export function sendEvent(
  http: TestAgent,
  event: ProviderEvent | string,
  options: { secrets?: string[]; at?: number; header?: string | null } = {},
) {
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const request = http.post('/api/v1/payments/webhook').set('Content-Type', 'application/json');
  const header =
    options.header === undefined
      ? signatureHeader(options.secrets ?? [PAYMENT_SECRET], body, options.at)
      : options.header;
  if (header !== null) request.set('Seckill-Signature', header);
  return request.send(body);
}
