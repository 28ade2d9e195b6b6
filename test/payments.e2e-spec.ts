import type { RowDataPacket } from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import { signatureHeader } from '../src/common/webhook-signature.js';
import { SaleBoardService } from '../src/modules/dashboard/sale-board.service.js';
import { OrderLifecycleService } from '../src/modules/orders/order-lifecycle.service.js';
import { SaleLoaderStore } from '../src/modules/sale-store/sale-loader.store.js';
import {
  acceptWithoutPublishing,
  adminAuth,
  bearer,
  consistentReconcile,
  counter,
  createSale,
  useApp,
  waitFor,
} from './support/harness.js';
import { allBuyers, bucketStocks, unsettled, usersHomed } from './support/stock-buckets.js';
import {
  buyPending,
  PAYMENT_SECRET,
  paymentEvent,
  sendEvent,
  UNIT_AMOUNT,
} from './support/payment-provider.js';

const PAYMENT_TIMEOUT_MS = 2_000;
const GRACE_SECONDS = 4;
const OLD_SECRET = 'whsec_old_0123456789abcdef';

describe('payments: the provider webhook', () => {
  const t = useApp({
    ORDER_PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS),
    PAYMENT_WEBHOOK_SECRET: `${OLD_SECRET},${PAYMENT_SECRET}`,
    PAYMENT_GRACE_SECONDS: String(GRACE_SECONDS),
  });
  const { stores } = t;

  const buy = (goodsId: number, userId: number) => buyPending(t.http, stores, goodsId, userId);

  const order = async (orderNo: string) =>
    (await t.http.get(`/api/v1/orders/${orderNo}`).set('Authorization', adminAuth()).expect(200))
      .body as { status: string; expireAt: string };

  const recordedEvents = async (orderNo: string) => {
    const [rows] = await stores.mysql.query<RowDataPacket[]>(
      'SELECT event_id, outcome, status FROM seckill_payment_event WHERE order_no = ?',
      [orderNo],
    );
    return rows;
  };

  /** Buys one unit and waits until its deadline has cancelled it and Redis has the unit back. */
  async function expiredOrder(goodsId: number, userId: number, stock: number, shards = 1) {
    const orderNo = await buy(goodsId, userId);
    await waitFor(async () => (await order(orderNo)).status === 'CANCELLED', {
      timeoutMs: PAYMENT_TIMEOUT_MS + 15_000,
      what: 'the order to expire',
    });
    const redisStock = async () =>
      (await bucketStocks(stores.redis, goodsId, shards)).reduce<number>(
        (sum, n) => sum + (n ?? 0),
        0,
      );
    await waitFor(async () => (await redisStock()) === stock, {
      what: 'its unit back in redis',
    });
    return orderNo;
  }

  it('should refuse a missing, wrong or stale signature with 401 BAD_SIGNATURE and change nothing, and take either secret while one is rotated', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const orderNo = await buy(goodsId, 3201);
    const event = paymentEvent('payment.succeeded', orderNo);
    const body = JSON.stringify(event);
    const now = Math.floor(Date.now() / 1_000);
    const refusals = [
      await sendEvent(t.http, event, { header: null }),
      await sendEvent(t.http, event, { secrets: ['whsec_someone_else_0123456'] }),
      await sendEvent(t.http, event, { at: now - 301 }),
      await sendEvent(t.http, event, { at: now + 301 }),
      await sendEvent(t.http, event, { header: 'v1=abc' }),
      // Signed over another body than the one sent (the amount changed on the way).
      await sendEvent(t.http, event, {
        header: signatureHeader([PAYMENT_SECRET], body.replace(String(UNIT_AMOUNT), '1')),
      }),
    ];
    for (const refusal of refusals) {
      expect(refusal.status).toBe(401);
      expect(refusal.body).toEqual({
        statusCode: 401,
        code: 'BAD_SIGNATURE',
        message: expect.any(String),
      });
    }
    expect((await order(orderNo)).status).toBe('PENDING_PAYMENT');
    expect(await recordedEvents(orderNo)).toHaveLength(0);

    const paid = await sendEvent(t.http, event, { secrets: [OLD_SECRET] }).expect(200);
    expect(paid.body).toEqual({ eventId: event.id, orderNo, status: 'PAID' });
    const other = await buy(goodsId, 3202);
    await sendEvent(t.http, paymentEvent('payment.succeeded', other)).expect(200);
    expect((await order(other)).status).toBe('PAID');
  });

  it('should apply an event once however often and however concurrently it is delivered, answering each delivery the same', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const orderNo = await buy(goodsId, 3211);
    const event = paymentEvent('payment.succeeded', orderNo);
    const before = await counter(t.app, 'seckill_payment_events_total', 'duplicate');

    const answers = await Promise.all(Array.from({ length: 4 }, () => sendEvent(t.http, event)));
    answers.push(await sendEvent(t.http, event));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ eventId: event.id, orderNo, status: 'PAID' });
    }
    expect(await recordedEvents(orderNo)).toEqual([
      { event_id: event.id, outcome: 'paid', status: 'PAID' },
    ]);
    expect(await counter(t.app, 'seckill_payment_events_total', 'duplicate')).toBe(before + 4);
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
  });

  it("should refuse an amount or currency that is not the order's with 409 PAYMENT_MISMATCH, a malformed event with 400, an unknown order with 404, changing nothing", async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const orderNo = await buy(goodsId, 3221);
    for (const wrong of [
      paymentEvent('payment.succeeded', orderNo, { amount: UNIT_AMOUNT - 1 }),
      paymentEvent('payment.succeeded', orderNo, { currency: 'USD' }),
    ]) {
      const refused = await sendEvent(t.http, wrong).expect(409);
      expect(refused.body).toEqual({
        statusCode: 409,
        code: 'PAYMENT_MISMATCH',
        message: expect.any(String),
      });
    }
    const malformed = await sendEvent(t.http, '{"id": "evt_x", "type": ').expect(400);
    expect(malformed.body.code).toBe('VALIDATION_FAILED');
    const badField = await sendEvent(t.http, {
      ...paymentEvent('payment.succeeded', orderNo),
      type: 'payment.refunded',
    } as never).expect(400);
    expect(badField.body.code).toBe('VALIDATION_FAILED');
    const unknown = await sendEvent(
      t.http,
      paymentEvent('payment.succeeded', 'SK1NOSUCHORDER'),
    ).expect(404);
    expect(unknown.body.code).toBe('ORDER_NOT_FOUND');
    expect((await order(orderNo)).status).toBe('PENDING_PAYMENT');
    expect(await recordedEvents(orderNo)).toHaveLength(0);
  });

  it('should extend the deadline once on payment.started, so that the payment timeout lets a payment under way finish', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const orderNo = await buy(goodsId, 3231);
    const deadline = Date.parse((await order(orderNo)).expireAt);

    const started = await sendEvent(t.http, paymentEvent('payment.started', orderNo)).expect(200);
    expect(started.body.status).toBe('PENDING_PAYMENT');
    const extended = Date.parse((await order(orderNo)).expireAt);
    expect(extended - deadline).toBe(GRACE_SECONDS * 1_000);
    // Once: a second start (another attempt at the checkout) moves it no further.
    await sendEvent(t.http, paymentEvent('payment.started', orderNo)).expect(200);
    expect(Date.parse((await order(orderNo)).expireAt)).toBe(extended);
    expect(await recordedEvents(orderNo)).toEqual(
      expect.arrayContaining([expect.objectContaining({ outcome: 'extended' })]),
    );

    // Past the first deadline by MySQL's clock, the payment timeout finds the order not due.
    await waitFor(
      async () => {
        const [rows] = await stores.mysql.query<RowDataPacket[]>('SELECT NOW(3) > ? AS passed', [
          new Date(deadline + 500),
        ]);
        return Number(rows[0].passed) === 1;
      },
      { timeoutMs: PAYMENT_TIMEOUT_MS + 5_000, what: 'the first deadline to pass' },
    );
    expect(await t.app.get(OrderLifecycleService).expire(orderNo)).toMatchObject({
      outcome: 'not_due',
    });
    expect(Date.now()).toBeGreaterThan(deadline);
    expect((await order(orderNo)).status).toBe('PENDING_PAYMENT');
    const paid = await sendEvent(t.http, paymentEvent('payment.succeeded', orderNo)).expect(200);
    expect(paid.body.status).toBe('PAID');
    expect(await stores.mysqlStock(goodsId)).toBe(1);
  });

  it('should take the unit again for a payment that lands after the cancel while one is left: PAID, counted once in both stores', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const orderNo = await expiredOrder(goodsId, 3241, 2);
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    const event = paymentEvent('payment.succeeded', orderNo);

    for (let i = 0; i < 2; i++) {
      const late = await sendEvent(t.http, event).expect(200);
      expect(late.body).toEqual({ eventId: event.id, orderNo, status: 'PAID' });
    }
    // Another event for it (the provider's own retry under a new id) changes nothing either.
    await sendEvent(t.http, paymentEvent('payment.succeeded', orderNo)).expect(200);
    expect((await order(orderNo)).status).toBe('PAID');
    expect(await stores.mysqlStock(goodsId)).toBe(1);
    expect(await stores.redisStock(goodsId)).toBe(1);
    expect(await stores.redisBuyers(goodsId)).toEqual({ '3241': '1' });
    const report = await consistentReconcile(t.http, goodsId);
    expect(report.orders).toMatchObject({ paid: 1, cancelled: 0, refundRequired: 0 });
    const board = await t.app.get(SaleBoardService).build();
    expect(board.sales.find((sale) => sale.id === goodsId)?.latePayments).toEqual({
      retaken: 1,
      refundRequired: 0,
    });
    // One active order per buyer, as always: the buyer cannot buy a second.
    const again = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(3241))
      .expect(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
  });

  it('should leave a late payment REFUND_REQUIRED, never oversold, when its unit was sold to another buyer', async () => {
    const goodsId = await createSale(t.http, { stock: 1 });
    const orderNo = await expiredOrder(goodsId, 3251, 1);
    await buy(goodsId, 3252);

    const late = await sendEvent(t.http, paymentEvent('payment.succeeded', orderNo)).expect(200);
    expect(late.body.status).toBe('REFUND_REQUIRED');
    expect((await order(orderNo)).status).toBe('REFUND_REQUIRED');
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await stores.redisStock(goodsId)).toBe(0);
    const report = await consistentReconcile(t.http, goodsId);
    expect(report.orders).toMatchObject({ pendingPayment: 1, refundRequired: 1 });
    const board = await t.app.get(SaleBoardService).build();
    expect(board.sales.find((sale) => sale.id === goodsId)).toMatchObject({
      latePayments: { retaken: 0, refundRequired: 1 },
      units: { refundRequired: 1 },
    });
    const cancel = await t.http
      .post(`/api/v1/orders/${orderNo}/cancel`)
      .set('Authorization', bearer(3251))
      .expect(409);
    expect(cancel.body.code).toBe('ORDER_PAID');
  });

  it("should take a late payment's unit from another bucket when its buyer's home bucket sold it since, and refund only once every bucket is empty", async () => {
    const shards = 4;
    const goodsId = await createSale(t.http, { stock: 4, stockShards: shards });
    // Two buyers of one home bucket (one unit per bucket), a third of another.
    const [late, sameHome] = usersHomed(3281, 2, shards, (home) => home === 0);
    const [elsewhere] = usersHomed(3281, 1, shards, (home) => home !== 0);
    // Every order here is paid at once: the deadline (2 s) would give the units back.
    const payNow = async (userId: number) =>
      sendEvent(t.http, paymentEvent('payment.succeeded', await buy(goodsId, userId))).expect(200);
    const orderNo = await expiredOrder(goodsId, late, 4, shards);
    await payNow(sameHome);
    expect(await bucketStocks(stores.redis, goodsId, shards)).toEqual([0, 1, 1, 1]);

    const event = paymentEvent('payment.succeeded', orderNo);
    const paid = await sendEvent(t.http, event).expect(200);
    expect(paid.body.status).toBe('PAID');
    await sendEvent(t.http, event).expect(200);
    expect((await order(orderNo)).status).toBe('PAID');
    const stocks = await bucketStocks(stores.redis, goodsId, shards);
    expect(stocks[0]).toBe(0);
    expect(stocks.reduce<number>((sum, stock) => sum + stock!, 0)).toBe(2);
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await allBuyers(stores.redis, goodsId, shards)).toEqual({
      [late]: '1',
      [sameHome]: '1',
    });
    // The loan is settled with the answer (dropped: the order holds the unit at home).
    expect(await unsettled(stores.redis, goodsId, shards)).toBe(0);
    await consistentReconcile(t.http, goodsId);

    // A repair rebuilds every bucket from MySQL and Redis's records: the unit stays counted once.
    await t.http
      .post(`/api/v1/admin/goods/${goodsId}/reconcile/repair`)
      .set('Authorization', adminAuth())
      .expect(200);
    const rebuilt = await bucketStocks(stores.redis, goodsId, shards);
    expect(rebuilt.reduce<number>((sum, stock) => sum + stock!, 0)).toBe(2);

    // With every bucket sold, a late payment has no unit left anywhere: a refund, never oversold.
    const other = await expiredOrder(goodsId, elsewhere, 2, shards);
    await payNow(3400);
    await payNow(3401);
    const refund = await sendEvent(t.http, paymentEvent('payment.succeeded', other)).expect(200);
    expect(refund.body.status).toBe('REFUND_REQUIRED');
    expect(await bucketStocks(stores.redis, goodsId, shards)).toEqual([0, 0, 0, 0]);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await unsettled(stores.redis, goodsId, shards)).toBe(0);
    await consistentReconcile(t.http, goodsId);
  });

  it("should not settle a late payment while Redis has lost the sale, which may hold its buyer's purchase still on its way to MySQL", async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const first = await buy(goodsId, 3271);
    await t.http
      .post(`/api/v1/orders/${first}/cancel`)
      .set('Authorization', bearer(3271))
      .expect(200);
    await waitFor(async () => (await stores.redisStock(goodsId)) === 3, { what: 'the restock' });
    // The buyer buys again; its purchase is accepted in Redis and not yet in MySQL. Then Redis
    // loses the sale (a restart): MySQL alone cannot see that purchase.
    const again = await acceptWithoutPublishing(t.app, goodsId, 3271);
    await t.app.get(SaleLoaderStore).forget(goodsId);

    const late = await sendEvent(t.http, paymentEvent('payment.succeeded', first)).expect(503);
    expect(late.body.code).toBe('UNAVAILABLE');
    expect((await order(first)).status).toBe('CANCELLED');
    expect(await recordedEvents(first)).toHaveLength(0);
    expect(again.orderNo).not.toBe(first);
  });

  it('should leave a late payment REFUND_REQUIRED when its buyer holds another order of the goods', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const first = await buy(goodsId, 3261);
    await t.http
      .post(`/api/v1/orders/${first}/cancel`)
      .set('Authorization', bearer(3261))
      .expect(200);
    await waitFor(async () => (await stores.redisStock(goodsId)) === 3, { what: 'the restock' });
    const second = await buy(goodsId, 3261);

    const late = await sendEvent(t.http, paymentEvent('payment.succeeded', first)).expect(200);
    expect(late.body.status).toBe('REFUND_REQUIRED');
    expect((await order(second)).status).toBe('PENDING_PAYMENT');
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
    await consistentReconcile(t.http, goodsId);
  });
});

describe('payments: without a provider secret', () => {
  const t = useApp({ PAYMENT_WEBHOOK_SECRET: '' });

  it('should answer the webhook 503 UNAVAILABLE, since no event can be trusted', async () => {
    const answer = await sendEvent(t.http, paymentEvent('payment.succeeded', 'SK1')).expect(503);
    expect(answer.body).toEqual({
      statusCode: 503,
      code: 'UNAVAILABLE',
      message: expect.any(String),
    });
  });
});
