import amqp from 'amqplib';
import { createPool, type Pool, type RowDataPacket } from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RabbitMqConnection } from '../src/infra/rabbitmq/rabbitmq.connection.js';
import { DatabasePurchaseService } from '../src/modules/seckill/database-purchase.service.js';
import { PurchaseAvailabilityService } from '../src/modules/availability/purchase-availability.service.js';
import { encodeTimeoutMessage } from '../src/modules/messaging/timeout-message.js';
import { OrderLifecycleService } from '../src/modules/orders/order-lifecycle.service.js';
import { OrdersService } from '../src/modules/orders/orders.service.js';
import { ReconcileChecksService } from '../src/modules/reconcile/reconcile-checks.service.js';
import { bearer, createSale, startApp, useApp, waitFor, type TestApp } from './support/harness.js';
import { PrivateMysql } from './support/private-mysql.js';
import { PrivateRedis } from './support/private-redis.js';

/**
 * One clock per decision: the sale window in the database fallback, the payment deadline and
 * the reconcile's "recent cancel" are judged by MySQL's clock, whichever host asks and whatever
 * its own clock says.
 */

type Agent = TestApp['http'];

/** A purchase through the Redis path, until its order is written; returns the order. */
async function boughtOrder(http: Agent, mysql: Pool, goodsId: number, userId: number) {
  await http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId)).expect(202);
  return waitFor(
    async () => {
      const [rows] = await mysql.query<RowDataPacket[]>(
        'SELECT order_no, status FROM seckill_order WHERE goods_id = ? AND user_id = ?',
        [goodsId, userId],
      );
      return rows[0] as { order_no: string; status: string } | undefined;
    },
    { what: 'the order' },
  );
}

async function statusOf(mysql: Pool, orderNo: string): Promise<string> {
  const [rows] = await mysql.query<RowDataPacket[]>(
    'SELECT status FROM seckill_order WHERE order_no = ?',
    [orderNo],
  );
  return rows[0].status as string;
}

/** This process's clock (the app's host) `offsetMs` off the real time, MySQL's. */
const skewDateNow = (offsetMs: number) => {
  const now = Date.now();
  vi.spyOn(Date, 'now').mockImplementation(() => now + offsetMs);
};

describe("decisions by MySQL's clock, whatever the host's says", () => {
  const t = useApp();

  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it("should refuse a fallback purchase before the sale starts by MySQL's clock, though this host's runs a minute ahead", async () => {
    const goodsId = await createSale(t.http, { stock: 5, startsInMs: 30_000 });
    // Opened to the fallback, as after a barrier had passed.
    await t.stores.mysql.query('UPDATE seckill_goods SET fallback_open = 1 WHERE id = ?', [
      goodsId,
    ]);
    const fallback = t.app.get(DatabasePurchaseService);
    const ticket = t.app.get(PurchaseAvailabilityService).ticket(goodsId);

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 60_000 });
    const answer = await fallback.purchase(ticket, 81_001, 1).catch((error: unknown) => error);
    vi.useRealTimers();

    expect(answer).toMatchObject({ code: 'SALE_NOT_STARTED' });
    expect(await t.stores.orders(goodsId)).toEqual([]);
    expect(await t.stores.mysqlStock(goodsId)).toBe(5);
  });

  it("should expire an order whose timeout came early by MySQL's clock once it is due, not a whole payment timeout later", async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const order = await boughtOrder(t.http, t.stores.mysql, goodsId, 81_002);
    // The deadline as an API host two seconds ahead of MySQL's clock writes it.
    await t.stores.mysql.query(
      'UPDATE seckill_order SET expire_at = NOW(3) + INTERVAL 2 SECOND WHERE order_no = ?',
      [order.order_no],
    );
    // Its timeout message leaves the delay queue now, as the broker's timer says.
    const connection = await amqp.connect(process.env.RABBITMQ_URL!);
    const channel = await connection.createConfirmChannel();
    channel.sendToQueue(
      t.app.get(RabbitMqConnection).names.timeoutQueue,
      Buffer.from(encodeTimeoutMessage([{ orderNo: order.order_no, goodsId }])),
      { persistent: true },
    );
    await channel.waitForConfirms();
    await connection.close();

    // ORDER_PAYMENT_TIMEOUT_MS is 15 minutes here: sent round again, it would not be cancelled.
    const cancelled = await waitFor(
      async () => {
        const [rows] = await t.stores.mysql.query<RowDataPacket[]>(
          'SELECT status, updated_at >= expire_at AS afterDeadline FROM seckill_order WHERE order_no = ?',
          [order.order_no],
        );
        return rows[0].status === 'CANCELLED' ? rows[0] : null;
      },
      { timeoutMs: 10_000, what: 'the order cancelled' },
    );
    expect(Number(cancelled.afterDeadline)).toBe(1);
    expect(await t.stores.mysqlStock(goodsId)).toBe(5);
  });

  it("should refuse a payment after the deadline by MySQL's clock, though this host's runs a minute behind", async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const order = await boughtOrder(t.http, t.stores.mysql, goodsId, 81_003);
    await t.stores.mysql.query(
      'UPDATE seckill_order SET expire_at = NOW(3) - INTERVAL 2 SECOND WHERE order_no = ?',
      [order.order_no],
    );

    skewDateNow(-60_000);
    const paid = await t.app
      .get(OrderLifecycleService)
      .pay(order.order_no, 81_003)
      .catch((error: unknown) => error);
    vi.restoreAllMocks();

    expect(paid).toMatchObject({ code: 'ORDER_CANCELLED' });
    expect(await statusOf(t.stores.mysql, order.order_no)).toBe('CANCELLED');
  });

  it("should count a cancel as recent by MySQL's clock, though this host's runs a quarter of an hour ahead", async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const order = await boughtOrder(t.http, t.stores.mysql, goodsId, 81_004);
    await t.http
      .post(`/api/v1/orders/${order.order_no}/cancel`)
      .set('Authorization', bearer(81_004))
      .expect(200);

    skewDateNow(15 * 60_000);
    const recent = await t.app.get(OrdersService).recentlyCancelled(goodsId, 10 * 60_000);
    vi.restoreAllMocks();

    expect(recent.map((cancelled) => cancelled.orderNo)).toEqual([order.order_no]);
  });

  it("should finish a stalled stock return by MySQL's clock, though this host's runs a minute behind", async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const order = await boughtOrder(t.http, t.stores.mysql, goodsId, 81_005);
    // A cancel committed six seconds ago whose Redis step never ran (Redis was down just then).
    await t.stores.mysql.query(
      "UPDATE seckill_order SET status = 'CANCELLED', version = version + 1, updated_at = NOW(3) - INTERVAL 6 SECOND WHERE order_no = ?",
      [order.order_no],
    );
    await t.stores.mysql.query('UPDATE seckill_goods SET stock = stock + 1 WHERE id = ?', [
      goodsId,
    ]);
    expect(await t.stores.redisStock(goodsId)).toBe(4);

    skewDateNow(-60_000);
    await t.app.get(ReconcileChecksService).check(goodsId);
    vi.restoreAllMocks();

    expect(await t.stores.redisStock(goodsId)).toBe(5);
  });
});

describe('a MySQL server whose time zone is not UTC', () => {
  let server: PrivateMysql;
  let redis: PrivateRedis;
  let api: TestApp;
  let mysql: Pool;

  beforeAll(async () => {
    server = await PrivateMysql.start({ timeZone: '-08:00' });
    redis = await PrivateRedis.start();
    const databaseUrl = server.url('seckill_test_tz');
    api = await startApp({ DATABASE_URL: databaseUrl, REDIS_URL: redis.url });
    mysql = createPool({ uri: databaseUrl, connectionLimit: 2 });
  });

  afterAll(async () => {
    await mysql?.end();
    await api?.close();
    await redis?.kill();
    await server?.stop();
  });

  it("should stamp an order's createdAt in UTC and expire it by MySQL's clock, as on a server in UTC", async () => {
    const goodsId = await createSale(api.http, { stock: 5 });
    const order = await boughtOrder(api.http, mysql, goodsId, 82_001);

    const view = await api.http
      .get(`/api/v1/orders/${order.order_no}`)
      .set('Authorization', bearer(82_001))
      .expect(200);
    expect(Math.abs(Date.parse(view.body.createdAt as string) - Date.now())).toBeLessThan(60_000);

    // A deadline a second ago, in UTC as the app writes every instant: due by MySQL's clock.
    await mysql.query(
      'UPDATE seckill_order SET expire_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE order_no = ?',
      [order.order_no],
    );
    expect(await api.app.get(OrderLifecycleService).expire(order.order_no)).toEqual({
      outcome: 'cancelled',
    });
  });
});
