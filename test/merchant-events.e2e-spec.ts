import type TestAgent from 'supertest/lib/agent.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MerchantReceiver,
  type ReceivedEvent,
} from '../scripts/fake-provider/merchant-receiver.js';
import { MerchantDeliveryService } from '../src/modules/merchant-events/merchant-delivery.service.js';
import { openBrowserTab } from './support/browser.js';
import { ChildApp } from './support/child-app.js';
import {
  adminAuth,
  bearer,
  createSale,
  startApp,
  Stores,
  token,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { buyPending, PAYMENT_SECRET, paymentEvent, sendEvent } from './support/payment-provider.js';

const MERCHANT_SECRET = 'whsec_merchant_0123456789abcdef';
const PAYMENT_TIMEOUT_MS = 2_000;

/** An app whose order events go to a receiver of the test's own, started before it. */
function useMerchant(env: Record<string, string> = {}) {
  const context = {} as { receiver: MerchantReceiver; app: TestApp; stores: Stores };
  beforeAll(async () => {
    context.receiver = await MerchantReceiver.start(MERCHANT_SECRET);
    context.app = await startApp({
      ORDER_PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS),
      PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
      MERCHANT_WEBHOOK_URL: context.receiver.url,
      MERCHANT_WEBHOOK_SECRET: MERCHANT_SECRET,
      ...env,
    });
    context.stores = new Stores();
  });
  afterAll(async () => {
    await context.app?.close();
    await context.receiver?.close();
    await context.stores?.close();
  });
  return context;
}

const statusOf = async (http: TestAgent, orderNo: string) =>
  (await http.get(`/api/v1/orders/${orderNo}`).set('Authorization', adminAuth()).expect(200)).body
    .status as string;

describe("merchant events: every order change told to the shop's webhook", () => {
  const t = useMerchant();

  it('should tell the merchant each change of an order once, signed, in the order it happened', async () => {
    const { app, stores, receiver } = t;
    const goodsId = await createSale(app.http, { stock: 3 });
    const paid = await buyPending(app.http, stores, goodsId, 3301);
    await sendEvent(app.http, paymentEvent('payment.succeeded', paid)).expect(200);
    const cancelled = await buyPending(app.http, stores, goodsId, 3302);
    await app.http
      .post(`/api/v1/orders/${cancelled}/cancel`)
      .set('Authorization', bearer(3302))
      .expect(200);

    const scarce = await createSale(app.http, { stock: 1 });
    const late = await buyPending(app.http, stores, scarce, 3303);
    await waitFor(async () => (await statusOf(app.http, late)) === 'CANCELLED', {
      timeoutMs: PAYMENT_TIMEOUT_MS + 15_000,
      what: 'the order to expire',
    });
    await waitFor(async () => (await stores.redisStock(scarce)) === 1, { what: 'the restock' });
    await buyPending(app.http, stores, scarce, 3304);
    await sendEvent(app.http, paymentEvent('payment.succeeded', late)).expect(200);

    const expected: Record<string, string[]> = {
      [paid]: ['order.created', 'order.paid'],
      [cancelled]: ['order.created', 'order.cancelled'],
      [late]: ['order.created', 'order.expired', 'order.refund_required'],
    };
    await waitFor(
      () =>
        Object.entries(expected).every(
          ([orderNo, types]) => receiver.typesOf(orderNo).length === types.length,
        ),
      { what: 'every event at the merchant' },
    );
    for (const [orderNo, types] of Object.entries(expected)) {
      expect(receiver.typesOf(orderNo)).toEqual(types);
    }
    const refund = receiver.events.find(
      (event) => event.data.orderNo === late && event.type === 'order.refund_required',
    )!;
    expect(refund).toEqual<ReceivedEvent>({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      type: 'order.refund_required',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: {
        orderNo: late,
        goodsId: scarce,
        userId: 3303,
        quantity: 1,
        status: 'REFUND_REQUIRED',
      },
    });
    expect(receiver.badSignatures).toBe(0);

    // A week after their delivery, an order's events are dropped.
    await stores.mysql.query(
      'UPDATE seckill_merchant_event SET delivered_at = delivered_at - INTERVAL 8 DAY WHERE order_no = ?',
      [paid],
    );
    expect(await app.app.get(MerchantDeliveryService).prune()).toBe(2);
  });
});

describe('merchant events: a merchant that fails', () => {
  const t = useMerchant({ MERCHANT_WEBHOOK_RETRY_SECONDS: '2', ORDER_PAYMENT_TIMEOUT_MS: '60000' });

  it("should retry, park the event after its time, hold its order's later events behind it, and deliver them in order once an operator retries", async () => {
    const { app, stores, receiver } = t;
    const goodsId = await createSale(app.http, { stock: 3 });
    let down = true;
    // Refused by the buyer, whose order number is not known before its first event is written.
    const userId = 3311;
    const orderNoOf = () =>
      stores.orders(goodsId).then((rows) => rows.find((row) => Number(row.user_id) === userId));
    receiver.answer = (event) => (down && event.data.userId === userId ? 503 : 200);
    const orderNo = await buyPending(app.http, stores, goodsId, userId);
    const parked = await waitFor(
      async () => {
        const list = await app.http
          .get('/api/v1/admin/merchant-events?state=parked')
          .set('Authorization', adminAuth())
          .expect(200);
        return (list.body as { orderNo: string; type: string; attempts: number }[]).find(
          (event) => event.orderNo === orderNo,
        );
      },
      { timeoutMs: 20_000, what: 'the event to be parked' },
    );
    expect(parked.type).toBe('order.created');
    expect(parked.attempts).toBeGreaterThan(1);
    expect(receiver.failedAnswers).toBeGreaterThan(1);

    // Its payment's event waits behind the parked one; another order's goes through.
    await sendEvent(app.http, paymentEvent('payment.succeeded', orderNo)).expect(200);
    const other = await buyPending(app.http, stores, goodsId, 3312);
    await waitFor(() => receiver.typesOf(other).length === 1, { what: "the other order's event" });
    expect(receiver.typesOf(orderNo)).toEqual([]);
    expect((await orderNoOf())?.status).toBe('PAID');

    // The dashboard shows it parked; its button sends it again, and what waited behind it follows.
    down = false;
    const tab = await openBrowserTab();
    try {
      await tab.page.goto(`${await app.app.getUrl()}/dashboard#token=${token(1, { admin: true })}`);
      await waitFor(
        async () => (await tab.text(`sale-${goodsId}-merchant-parked`).catch(() => null)) === '1',
        {
          what: 'the parked event on the dashboard',
        },
      );
      await tab.page.getByTestId(`sale-${goodsId}-merchant-retry`).click();
      await waitFor(() => receiver.typesOf(orderNo).length === 2, { what: 'the held events' });
      expect(receiver.typesOf(orderNo)).toEqual(['order.created', 'order.paid']);
      await waitFor(async () => (await tab.text(`sale-${goodsId}-merchant-parked`)) === '0', {
        what: 'no parked event on the dashboard',
      });
      expect(tab.complaints).toEqual([]);
    } finally {
      await tab.browser.close();
    }
    const none = await app.http
      .post('/api/v1/admin/merchant-events/retry')
      .set('Authorization', adminAuth())
      .send({ goodsId })
      .expect(200);
    expect(none.body).toEqual({ retried: 0 });

    const bad = await app.http
      .post('/api/v1/admin/merchant-events/retry')
      .set('Authorization', adminAuth())
      .send({ eventIds: ['../x'] })
      .expect(400);
    expect(bad.body.code).toBe('VALIDATION_FAILED');
    await app.http.get('/api/v1/admin/merchant-events').set('Authorization', bearer(5)).expect(403);
  });
});

describe('merchant events: a worker killed mid-delivery', () => {
  const receiver = {} as { it: MerchantReceiver };
  let api: TestApp;
  let stores: Stores;
  const env = () => ({
    PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
    MERCHANT_WEBHOOK_URL: receiver.it.url,
    MERCHANT_WEBHOOK_SECRET: MERCHANT_SECRET,
    MERCHANT_WEBHOOK_TIMEOUT_MS: '1000',
  });

  beforeAll(async () => {
    receiver.it = await MerchantReceiver.start(MERCHANT_SECRET);
    api = await startApp({ ...env(), APP_ROLE: 'api' });
    stores = new Stores();
  });
  afterAll(async () => {
    await api?.close();
    await receiver.it?.close();
    await stores?.close();
  });

  it("should lose nothing: another worker delivers the event once the dead one's lease runs out", async () => {
    const first = await ChildApp.start({ ...env(), APP_ROLE: 'worker' });
    let second: ChildApp | undefined;
    try {
      const goodsId = await createSale(api.http, { stock: 2 });
      let hung = 0;
      receiver.it.answer = () => (hung++ === 0 ? 'hang' : 200);
      const orderNo = await buyPending(api.http, stores, goodsId, 3321);
      await waitFor(() => hung > 0, { what: 'the first delivery to reach the merchant' });
      await first.stop('SIGKILL');
      const killedAt = Date.now();

      second = await ChildApp.start({ ...env(), APP_ROLE: 'worker' });
      await waitFor(() => receiver.it.typesOf(orderNo).length === 1, {
        timeoutMs: 20_000,
        what: 'the event delivered by the second worker',
      });
      expect(receiver.it.typesOf(orderNo)).toEqual(['order.created']);
      // The lease (three delivery timeouts) is what the event waited for, not much more.
      expect(Date.now() - killedAt).toBeLessThan(15_000);
    } finally {
      await first.stop('SIGKILL');
      await second?.stop();
    }
  });
});
