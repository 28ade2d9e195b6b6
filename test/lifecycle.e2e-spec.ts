import amqp from 'amqplib';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTimeoutMessage } from '../src/modules/messaging/timeout-message.js';
import { OrderLifecycleService } from '../src/modules/orders/order-lifecycle.service.js';
import { ReconcileChecksService } from '../src/modules/reconcile/reconcile-checks.service.js';
import {
  counter,
  adminAuth,
  bearer,
  createSale,
  startApp,
  Stores,
  waitFor,
  type TestApp,
  useApp,
} from './support/harness.js';

const PAYMENT_TIMEOUT_MS = 2_000;
const prefix = process.env.RABBITMQ_PREFIX!;

/** The reads and purchases the lifecycle tests share, against one app. */
function lifecycleOf(t: ReturnType<typeof useApp>) {
  const stores = t.stores;

  /** Buys one unit and waits for the order row; returns its order number and deadline. */
  async function buyAndWait(goodsId: number, userId: number) {
    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .expect(202);
    const orderNo = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.find((row) => Number(row.user_id) === userId && row.status !== 'CANCELLED')
          ?.order_no;
      },
      { what: `the order of user ${userId}` },
    );
    const order = await t.http
      .get(`/api/v1/orders/${orderNo}`)
      .set('Authorization', bearer(userId))
      .expect(200);
    return { orderNo, expireAt: Date.parse(order.body.expireAt) };
  }

  const statusOf = async (orderNo: string) =>
    (await t.http.get(`/api/v1/orders/${orderNo}`).set('Authorization', adminAuth()).expect(200))
      .body.status as string;

  const reconcile = async (goodsId: number) =>
    (
      await t.http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth())
        .expect(200)
    ).body;

  return { stores, buyAndWait, statusOf, reconcile };
}

/** Puts a message straight into the timeout queue, as if its delay had just passed. */
async function publishTimeout(body: string): Promise<void> {
  const connection = await amqp.connect(process.env.RABBITMQ_URL!);
  const channel = await connection.createConfirmChannel();
  channel.publish(`${prefix}.timeout`, 'order.timeout', Buffer.from(body), { persistent: true });
  await channel.waitForConfirms();
  await connection.close();
}

describe('order lifecycle: pay, cancel, payment timeout, reconcile', () => {
  const t = useApp({ ORDER_PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS) });
  const { stores, buyAndWait, statusOf, reconcile } = lifecycleOf(t);

  it('should cancel an unpaid order at its deadline and give its stock back to both stores once, even when the timeout comes twice', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const { orderNo, expireAt } = await buyAndWait(goodsId, 401);
    expect(expireAt).toBeGreaterThan(Date.now());
    expect(await stores.mysqlStock(goodsId)).toBe(2);

    await waitFor(async () => (await statusOf(orderNo)) === 'CANCELLED', {
      timeoutMs: PAYMENT_TIMEOUT_MS + 15_000,
      what: 'the order to expire',
    });
    expect(Date.now()).toBeGreaterThanOrEqual(expireAt);
    await waitFor(async () => (await stores.redisStock(goodsId)) === 3, { what: 'redis restock' });
    expect(await stores.mysqlStock(goodsId)).toBe(3);
    expect(await stores.redisBuyers(goodsId)).toEqual({});

    const before = await counter(t.app, 'seckill_timeout_messages_total', 'already_cancelled');
    for (let i = 1; i <= 2; i++) {
      // In the version-1 format (one order a message), as a rolling upgrade finds it queued.
      await publishTimeout(JSON.stringify({ v: 1, orderNo, goodsId }));
      await waitFor(
        async () =>
          (await counter(t.app, 'seckill_timeout_messages_total', 'already_cancelled')) >=
          before + i,
        { what: `duplicate timeout ${i} consumed` },
      );
    }
    expect(await stores.mysqlStock(goodsId)).toBe(3);
    expect(await stores.redisStock(goodsId)).toBe(3);
    expect((await reconcile(goodsId)).consistent).toBe(true);
  });

  it('should keep an order paid just before its deadline and return nothing when the timeout fires', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const paidBefore = await counter(t.app, 'seckill_timeout_messages_total', 'paid');
    const { orderNo, expireAt } = await buyAndWait(goodsId, 402);
    await sleep(Math.max(0, expireAt - Date.now() - 300));
    const paid = await t.http
      .post(`/api/v1/orders/${orderNo}/pay`)
      .set('Authorization', bearer(402))
      .expect(200);
    expect(paid.body).toEqual({ orderNo, status: 'PAID' });

    await waitFor(
      async () => (await counter(t.app, 'seckill_timeout_messages_total', 'paid')) > paidBefore,
      { timeoutMs: PAYMENT_TIMEOUT_MS + 15_000, what: 'the timeout to find it paid' },
    );
    expect(await statusOf(orderNo)).toBe('PAID');
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
    // Paying again is fine; cancelling a paid order is not.
    await t.http
      .post(`/api/v1/orders/${orderNo}/pay`)
      .set('Authorization', bearer(402))
      .expect(200);
    const cancel = await t.http
      .post(`/api/v1/orders/${orderNo}/cancel`)
      .set('Authorization', bearer(402))
      .expect(409);
    expect(cancel.body).toEqual({
      statusCode: 409,
      code: 'ORDER_PAID',
      message: expect.any(String),
    });
  });

  it('should end many racing pay and cancel calls in exactly one outcome with at most one stock return', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    for (const userId of [403, 404, 405]) {
      const { orderNo } = await buyAndWait(goodsId, userId);
      const calls = Array.from({ length: 20 }, (_, i) =>
        t.http
          .post(`/api/v1/orders/${orderNo}/${i % 2 === 0 ? 'pay' : 'cancel'}`)
          .set('Authorization', bearer(userId))
          .then((response) => ({ kind: i % 2 === 0 ? 'pay' : 'cancel', ...response })),
      );
      const responses = await Promise.all(calls);
      const final = await statusOf(orderNo);
      for (const response of responses) {
        const won = (response.kind === 'pay') === (final === 'PAID');
        expect(response.status, JSON.stringify(response.body)).toBe(won ? 200 : 409);
      }
    }
    const report = await reconcile(goodsId);
    const cancelled = report.orders.cancelled;
    expect(report.orders.paid + cancelled).toBe(3);
    expect(report.dbStock).toBe(5 - report.orders.paid);
    expect(report.redisStock).toBe(5 - report.orders.paid);
    expect(report.consistent).toBe(true);
  });

  it('should settle a payment racing the deadline as either paid or cancelled, never both', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const { orderNo, expireAt } = await buyAndWait(goodsId, 406);
    await sleep(Math.max(0, expireAt - Date.now() - 5));
    const pay = await t.http
      .post(`/api/v1/orders/${orderNo}/pay`)
      .set('Authorization', bearer(406));
    const final = await statusOf(orderNo);
    if (pay.status === 200) {
      expect(final).toBe('PAID');
    } else {
      expect(pay.body.code).toBe('ORDER_CANCELLED');
      expect(final).toBe('CANCELLED');
    }
    await waitFor(async () => (await reconcile(goodsId)).consistent, { what: 'consistency' });
    const report = await reconcile(goodsId);
    expect(report.dbStock).toBe(final === 'PAID' ? 1 : 2);
    expect(report.redisStock).toBe(final === 'PAID' ? 1 : 2);
  });

  it('should let a user whose order was cancelled buy again, and return the stock once however often they cancel', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const first = await buyAndWait(goodsId, 407);
    for (let i = 0; i < 3; i++) {
      const cancelled = await t.http
        .post(`/api/v1/orders/${first.orderNo}/cancel`)
        .set('Authorization', bearer(407))
        .expect(200);
      expect(cancelled.body).toEqual({ orderNo: first.orderNo, status: 'CANCELLED' });
    }
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
    const paid = await t.http
      .post(`/api/v1/orders/${first.orderNo}/pay`)
      .set('Authorization', bearer(407))
      .expect(409);
    expect(paid.body.code).toBe('ORDER_CANCELLED');

    const second = await buyAndWait(goodsId, 407);
    expect(second.orderNo).not.toBe(first.orderNo);
    const rows = await stores.orders(goodsId);
    expect(rows.map((row) => row.status).sort()).toEqual(['CANCELLED', 'PENDING_PAYMENT']);
    expect(await stores.mysqlStock(goodsId)).toBe(1);
  });

  it("should refuse to pay or cancel another user's order, and answer 404 for an unknown one", async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const { orderNo } = await buyAndWait(goodsId, 408);
    for (const action of ['pay', 'cancel']) {
      const other = await t.http
        .post(`/api/v1/orders/${orderNo}/${action}`)
        .set('Authorization', bearer(409))
        .expect(403);
      expect(other.body.code).toBe('FORBIDDEN');
      const unknown = await t.http
        .post(`/api/v1/orders/SK404404/${action}`)
        .set('Authorization', bearer(408))
        .expect(404);
      expect(unknown.body.code).toBe('ORDER_NOT_FOUND');
    }
    expect(await statusOf(orderNo)).toBe('PENDING_PAYMENT');
  });

  it('should cancel an overdue order whose timeout message was lost', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const connection = await amqp.connect(process.env.RABBITMQ_URL!);
    const channel = await connection.createChannel();
    const { orderNo, expireAt } = await buyAndWait(goodsId, 410);
    // The broker loses the timeout message (a purge stands in for a lost disk).
    await channel.purgeQueue(`${prefix}.orders.delay.${PAYMENT_TIMEOUT_MS}ms`);
    await connection.close();
    await sleep(Math.max(0, expireAt - Date.now() + 10));
    expect(await t.app.get(OrderLifecycleService).expireOverdue(0, 100)).toBeGreaterThanOrEqual(1);
    expect(await statusOf(orderNo)).toBe('CANCELLED');
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
  });

  it('should reconcile consistently after a mixed run, detect a corrupted Redis and repair it', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const users = [411, 412, 413, 414, 415, 416, 417, 418];
    const orders: { userId: number; orderNo: string; expireAt: number }[] = [];
    for (const userId of users) orders.push({ userId, ...(await buyAndWait(goodsId, userId)) });
    for (const { userId, orderNo } of orders.slice(0, 3)) {
      await t.http
        .post(`/api/v1/orders/${orderNo}/pay`)
        .set('Authorization', bearer(userId))
        .expect(200);
    }
    for (const { userId, orderNo } of orders.slice(3, 5)) {
      await t.http
        .post(`/api/v1/orders/${orderNo}/cancel`)
        .set('Authorization', bearer(userId))
        .expect(200);
    }
    // The other three expire.
    await waitFor(
      async () => {
        const statuses = await Promise.all(orders.slice(5).map(({ orderNo }) => statusOf(orderNo)));
        return statuses.every((status) => status === 'CANCELLED');
      },
      // Three reads a poll: a slower poll keeps within the per-user read limit.
      { timeoutMs: PAYMENT_TIMEOUT_MS + 15_000, intervalMs: 250, what: 'three orders to expire' },
    );
    const report = await waitFor(async () => {
      const current = await reconcile(goodsId);
      return current.consistent ? current : null;
    });
    expect(report).toEqual({
      goodsId,
      totalStock: 10,
      dbStock: 7,
      redisStock: 7,
      redisState: 'LOADED',
      buyers: 3,
      orders: { pendingPayment: 0, paid: 3, cancelled: 5, refundRequired: 0 },
      inFlight: 0,
      consistent: true,
      drift: { redis: 0, db: 0 },
    });

    // Someone corrupts Redis: the stock is wrong and a paying buyer's slot is gone.
    await stores.redis.set(`seckill:{${goodsId}}:stock`, 9);
    await stores.redis.hdel(`seckill:{${goodsId}}:buyers`, '411');
    const broken = await reconcile(goodsId);
    expect(broken.consistent).toBe(false);
    expect(broken.drift.redis).toBe(-2);

    const forbidden = await t.http
      .post(`/api/v1/admin/goods/${goodsId}/reconcile/repair`)
      .set('Authorization', bearer(411))
      .expect(403);
    expect(forbidden.body.code).toBe('FORBIDDEN');
    const repaired = await t.http
      .post(`/api/v1/admin/goods/${goodsId}/reconcile/repair`)
      .set('Authorization', adminAuth())
      .expect(200);
    // What it found is reported, confirmed: drift Redis held, no restock under way to explain it.
    expect(repaired.body.before).toMatchObject({ consistent: false, drift: { redis: -2, db: 0 } });
    expect(repaired.body.found).toEqual({ drifted: true, settling: false });
    expect(repaired.body.after).toMatchObject({ consistent: true, redisStock: 7, buyers: 3 });
    const again = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(411))
      .expect(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
  });

  it('should finish a cancel whose Redis stock return never happened', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const { orderNo } = await buyAndWait(goodsId, 421);
    // The cancel committed in MySQL a while ago; Redis was down for its restock.
    await stores.mysql.query(
      "UPDATE seckill_order SET status = 'CANCELLED', version = version + 1, updated_at = NOW(3) - INTERVAL 30 SECOND WHERE order_no = ?",
      [orderNo],
    );
    await stores.mysql.query('UPDATE seckill_goods SET stock = stock + 1 WHERE id = ?', [goodsId]);
    expect(await stores.redisStock(goodsId)).toBe(1);

    const report = await t.app.get(ReconcileChecksService).check(goodsId);
    expect(report).toMatchObject({ consistent: true, redisStock: 2, dbStock: 2 });
    expect(await stores.redisBuyers(goodsId)).toEqual({});
    // Once only: a second run gives nothing back again.
    await t.app.get(ReconcileChecksService).check(goodsId);
    expect(await stores.redisStock(goodsId)).toBe(2);
  });

  it('should answer the reconcile route only to admins and 404 for unknown goods', async () => {
    const goodsId = await createSale(t.http);
    await t.http
      .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
      .set('Authorization', bearer(420))
      .expect(403);
    const unknown = await t.http
      .get('/api/v1/admin/goods/987654321/reconcile')
      .set('Authorization', adminAuth())
      .expect(404);
    expect(unknown.body.code).toBe('GOODS_NOT_FOUND');
  });
});

describe('payment timeouts: one message for a batch of orders', () => {
  // The default payment timeout: the orders' own timeout messages stay in the delay queue for
  // the whole test, so only the messages the tests send expire anything.
  const t = useApp();
  const { stores, buyAndWait, statusOf, reconcile } = lifecycleOf(t);
  const timeouts = (outcome: string) => counter(t.app, 'seckill_timeout_messages_total', outcome);

  /** Moves the orders' deadlines into the past, as if their payment timeout had passed. */
  async function makeDue(...orderNos: string[]): Promise<void> {
    await stores.mysql.query(
      'UPDATE seckill_order SET expire_at = UTC_TIMESTAMP(3) - INTERVAL 2 SECOND WHERE order_no IN (?)',
      [orderNos],
    );
  }

  it('should cancel exactly the unpaid order of a batch timeout message and keep the paid one', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const paid = await buyAndWait(goodsId, 431);
    const unpaid = await buyAndWait(goodsId, 432);
    await t.http
      .post(`/api/v1/orders/${paid.orderNo}/pay`)
      .set('Authorization', bearer(431))
      .expect(200);
    await makeDue(paid.orderNo, unpaid.orderNo);
    const [cancelledBefore, paidBefore] = [await timeouts('cancelled'), await timeouts('paid')];

    await publishTimeout(
      encodeTimeoutMessage([
        { orderNo: paid.orderNo, goodsId },
        { orderNo: unpaid.orderNo, goodsId },
      ]),
    );

    // Counted when the message is acked, every order of it at once.
    await waitFor(async () => (await timeouts('cancelled')) > cancelledBefore, {
      what: 'the batch timeout consumed',
    });
    expect(await timeouts('cancelled')).toBe(cancelledBefore + 1);
    expect(await timeouts('paid')).toBe(paidBefore + 1);
    expect(await statusOf(paid.orderNo)).toBe('PAID');
    expect(await statusOf(unpaid.orderNo)).toBe('CANCELLED');
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
    expect((await reconcile(goodsId)).consistent).toBe(true);
  });

  it('should cancel an order named twice in one timeout message once, and again not at all', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const { orderNo } = await buyAndWait(goodsId, 433);
    await makeDue(orderNo);
    const cancelledBefore = await timeouts('cancelled');
    const alreadyBefore = await timeouts('already_cancelled');
    const twice = encodeTimeoutMessage([
      { orderNo, goodsId },
      { orderNo, goodsId },
    ]);

    await publishTimeout(twice);
    await waitFor(async () => (await timeouts('cancelled')) > cancelledBefore, {
      what: 'the timeout consumed',
    });
    // The same message again (a redelivery): the order is already cancelled.
    await publishTimeout(twice);
    await waitFor(async () => (await timeouts('already_cancelled')) > alreadyBefore, {
      what: 'the repeated timeout consumed',
    });

    expect(await timeouts('cancelled')).toBe(cancelledBefore + 1);
    expect(await timeouts('already_cancelled')).toBe(alreadyBefore + 1);
    expect(await statusOf(orderNo)).toBe('CANCELLED');
    expect(await stores.mysqlStock(goodsId)).toBe(3);
    expect(await stores.redisStock(goodsId)).toBe(3);
    expect(await stores.redisBuyers(goodsId)).toEqual({});
  });
});

describe('metrics', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
  });

  afterAll(async () => {
    await t.close();
  });

  it('should export purchases, answer durations by route pattern, the purchase steps, the write and its lag, orders by status, publishes, consumer lag, the stores and reconcile drift', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(430)).expect(202);
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(430)).expect(409);
    const stores = new Stores();
    try {
      await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
      await waitFor(async () => (await stores.inflight(goodsId)) === 0, { what: 'settled' });
    } finally {
      await stores.close();
    }
    const reports = await t.app.get(ReconcileChecksService).checkActiveSales();
    expect(reports.find((report) => report.goodsId === goodsId)?.consistent).toBe(true);

    const metrics = (await t.http.get('/metrics').expect(200)).text;
    expect(metrics).toMatch(/seckill_purchases_total\{outcome="ACCEPTED",mode="redis"\} [1-9]/);
    expect(metrics).toMatch(
      /seckill_purchases_total\{outcome="ALREADY_PURCHASED",mode="redis"\} [1-9]/,
    );
    expect(metrics).toMatch(/seckill_publishes_total\{result="confirmed"\} [1-9]/);
    for (const status of [202, 409]) {
      expect(metrics).toMatch(
        new RegExp(
          `seckill_http_request_duration_seconds_count\\{method="POST",route="/api/v1/seckill/:goodsId",status="${status}"\\} [1-9]`,
        ),
      );
    }
    expect(metrics).not.toContain(`route="/api/v1/seckill/${goodsId}"`);
    expect(metrics).toContain(`seckill_orders{goods="${goodsId}",status="PENDING_PAYMENT"} 1`);
    expect(metrics).toContain(`seckill_reconcile_drift{goods="${goodsId}",store="redis"} 0`);
    expect(metrics).toContain(`seckill_reconcile_drift{goods="${goodsId}",store="mysql"} 0`);
    expect(metrics).toMatch(/seckill_queue_messages\{queue="[^"]+\.orders"\} \d+/);
    // The purchase's steps, the consumer's write and its lag, the backlog (none left), the stores.
    for (const stage of ['lock', 'deduct', 'confirm']) {
      expect(metrics).toMatch(
        new RegExp(`seckill_purchase_stage_duration_seconds_count\\{stage="${stage}"\\} [1-9]`),
      );
    }
    expect(metrics).toMatch(/seckill_order_batch_write_duration_seconds_count [1-9]/);
    expect(metrics).toMatch(/seckill_order_write_lag_seconds_count [1-9]/);
    expect(metrics).toContain(`seckill_orders_unwritten{goods="${goodsId}"} 0`);
    expect(metrics).toContain(`seckill_order_oldest_unwritten_age_seconds{goods="${goodsId}"} 0`);
    expect(metrics).toContain('seckill_redis_ready 1');
    expect(metrics).toMatch(/seckill_mysql_pool_connections\{pool="primary",state="used"\} \d+/);
    expect(metrics).toMatch(/seckill_mysql_pool_connections\{pool="primary",state="free"\} [1-9]/);
    expect(metrics).toContain('seckill_mysql_pool_waiting{pool="primary"} 0');
    expect(metrics).toContain('nodejs_eventloop_lag_seconds');
    expect(metrics).toContain('nodejs_gc_duration_seconds');
    expect(metrics).not.toContain('seckill_scrape_read_failures_total{');
  });
});
