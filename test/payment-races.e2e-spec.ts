import type { RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeProvider, type Checkout } from '../scripts/fake-provider/provider.js';
import { MerchantReceiver } from '../scripts/fake-provider/merchant-receiver.js';
import { LAST_ORDER_EVENT, ORDER_EVENT_PATHS } from '../scripts/fake-provider/order-events.js';
import {
  bearer,
  consistentReconcile,
  createSale,
  doubleClickCrowd,
  startApp,
  Stores,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { PAYMENT_SECRET } from './support/payment-provider.js';

const MERCHANT_SECRET = 'whsec_merchant_0123456789abcdef';
const PAYMENT_TIMEOUT_MS = 3_000;
const ORDERS = 300;
const SECOND_WAVE = 60;
const PRICE = 999.99;

/** A small deterministic generator, so that a failure replays the same races. */
function seeded(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The contract's race (issue: payments, item 5): 300 orders whose provider webhooks (each event
 * sent twice, some out of order), payment deadlines and buyers' cancels race, then a second wave of
 * buyers racing the late payments for the units that came back.
 */
describe('payments racing the deadline, the cancel and a second wave of buyers', () => {
  let app: TestApp;
  let stores: Stores;
  let receiver: MerchantReceiver;

  beforeAll(async () => {
    receiver = await MerchantReceiver.start(MERCHANT_SECRET);
    app = await startApp({
      ORDER_PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS),
      PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
      PAYMENT_GRACE_SECONDS: '1',
      MERCHANT_WEBHOOK_URL: receiver.url,
      MERCHANT_WEBHOOK_SECRET: MERCHANT_SECRET,
      TRUSTED_PROXIES: '127.0.0.1',
    });
    stores = new Stores();
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
    await stores?.close();
  });

  it('should end every order in exactly one of PAID, CANCELLED or REFUND_REQUIRED, its stock counted once in both stores, every merchant event delivered once', async () => {
    const random = seeded(3_2_300);
    const goodsId = await createSale(app.http, { stock: ORDERS });
    const provider = new FakeProvider({ baseUrl: await app.app.getUrl(), secret: PAYMENT_SECRET });
    const buyers = Array.from({ length: ORDERS }, (_, i) => 330_000 + i);
    const crowd = await doubleClickCrowd([app.http], goodsId, buyers);
    expect(crowd.filter((answer) => answer.status === 202)).toHaveLength(ORDERS);
    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length === ORDERS ? rows : null;
      },
      { timeoutMs: 30_000, what: 'every order written' },
    );

    const cancel = (userId: number, orderNo: string) =>
      app.http
        .post(`/api/v1/orders/${orderNo}/cancel`)
        .set('Authorization', bearer(userId))
        .set('X-Forwarded-For', `10.3.${(userId >> 8) & 255}.${userId & 255}`);
    // Each order's fate: paid (on time or at the deadline), cancelled while its payment runs,
    // or left to expire; some of the cancelled and expired are paid late.
    const late: Checkout[] = [];
    await Promise.all(
      orders.map(async (row, index) => {
        const checkout = provider.checkout(row.order_no, PRICE);
        const userId = Number(row.user_id);
        const options = { duplicate: true, reorder: random() < 0.3, skipStart: random() < 0.2 };
        const fate = random();
        if (fate < 0.3) {
          await provider.pay(checkout, options);
        } else if (fate < 0.5) {
          await Promise.all([provider.pay(checkout, options), cancel(userId, row.order_no)]);
        } else if (fate < 0.65) {
          // Around the deadline: the expiry and the payment race.
          await sleepMs(PAYMENT_TIMEOUT_MS - 200 + (index % 5) * 100);
          await provider.pay(checkout, { ...options, skipStart: true });
        } else if (fate < 0.8) {
          await cancel(userId, row.order_no);
          late.push(checkout);
        } else {
          late.push(checkout);
        }
      }),
    );
    await waitFor(
      async () => (await stores.orders(goodsId)).every((row) => row.status !== 'PENDING_PAYMENT'),
      { timeoutMs: PAYMENT_TIMEOUT_MS + 20_000, what: 'every first-wave order settled' },
    );

    // The late payments race a second wave of buyers for the units that came back.
    const wave = Array.from({ length: SECOND_WAVE }, (_, i) => 340_000 + i);
    await Promise.all([
      doubleClickCrowd([app.http], goodsId, wave),
      ...late.map((checkout) =>
        provider.pay(checkout, { duplicate: true, skipStart: true, reorder: false }),
      ),
    ]);
    // The second wave's orders are left to expire.
    await waitFor(
      async () =>
        (await stores.orders(goodsId)).every((row) => row.status !== 'PENDING_PAYMENT') &&
        (await stores.inflight(goodsId)) === 0,
      { timeoutMs: PAYMENT_TIMEOUT_MS + 30_000, what: 'every order settled' },
    );

    const final = await stores.orders(goodsId);
    for (const row of final) expect(['PAID', 'CANCELLED', 'REFUND_REQUIRED']).toContain(row.status);
    const paid = final.filter((row) => row.status === 'PAID');
    const refunds = final.filter((row) => row.status === 'REFUND_REQUIRED');
    // The races produced each outcome, or the test proves less than it says.
    expect(paid.length).toBeGreaterThan(0);
    expect(refunds.length).toBeGreaterThan(0);
    expect(final.some((row) => row.status === 'CANCELLED')).toBe(true);

    // Each unit counted once: MySQL's and Redis's stock hold what PAID orders do not.
    const report = await consistentReconcile(app.http, goodsId);
    expect(report.orders).toMatchObject({ pendingPayment: 0, paid: paid.length });
    expect(await stores.mysqlStock(goodsId)).toBe(ORDERS - paid.length);
    expect(await stores.redisStock(goodsId)).toBe(ORDERS - paid.length);
    expect(new Set(paid.map((row) => Number(row.user_id))).size).toBe(paid.length);

    // PAID only on a succeeded event, REFUND_REQUIRED only on one that came late.
    const [events] = await stores.mysql.query<RowDataPacket[]>(
      "SELECT order_no, outcome FROM seckill_payment_event WHERE goods_id = ? AND type = 'payment.succeeded'",
      [goodsId],
    );
    const outcomes = new Map<string, Set<string>>();
    for (const event of events) {
      const set = outcomes.get(event.order_no) ?? new Set<string>();
      set.add(event.outcome);
      outcomes.set(event.order_no, set);
    }
    for (const row of paid) {
      const of = [...(outcomes.get(row.order_no) ?? [])];
      expect(of.some((outcome) => outcome === 'paid' || outcome === 'retaken')).toBe(true);
    }
    for (const row of refunds)
      expect(outcomes.get(row.order_no)?.has('refund_required')).toBe(true);
    // Every repeated delivery answered as the first.
    const { repeats, same } = provider.repeatsAnsweredSame();
    expect(repeats).toBeGreaterThan(ORDERS);
    expect(same).toBe(repeats);
    expect(provider.answers.filter((answer) => answer.status !== 200)).toEqual([]);

    // Every merchant event delivered once after de-duplication, in its order's order.
    const outbox = await waitFor(
      async () => {
        const [rows] = await stores.mysql.query<RowDataPacket[]>(
          'SELECT event_id, order_no, type, delivered_at FROM seckill_merchant_event WHERE goods_id = ? ORDER BY id',
          [goodsId],
        );
        return rows.every((row) => row.delivered_at !== null) ? rows : null;
      },
      { timeoutMs: 30_000, what: 'every merchant event delivered' },
    );
    const received = receiver.events.filter((event) => event.data.goodsId === goodsId);
    expect(new Set(received.map((event) => event.id))).toEqual(
      new Set(outbox.map((row) => row.event_id as string)),
    );
    for (const row of final) {
      const types = receiver.typesOf(row.order_no);
      expect(ORDER_EVENT_PATHS.has(types.join(' ')), `${row.order_no}: ${types.join(' ')}`).toBe(
        true,
      );
      expect(LAST_ORDER_EVENT[row.status]).toContain(types.at(-1));
      expect(types).toEqual(
        outbox.filter((event) => event.order_no === row.order_no).map((event) => event.type),
      );
    }
    expect(receiver.badSignatures).toBe(0);
  });
});
