import { randomUUID } from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBucketKeys, bucketKeys } from '../src/infra/redis/seckill-keys.js';
import { DeductCode, LedgerScripts } from '../src/modules/sale-store/ledger.scripts.js';
import { LoanCode, LoanScripts } from '../src/modules/sale-store/loan.scripts.js';
import { bucketOrder, homeBucket } from '../src/common/stock-buckets.js';
import { encodeOrderMessage } from '../src/modules/messaging/order-message.js';
import { OutboxSweeperService } from '../src/modules/messaging/outbox-sweeper.service.js';
import { newOrderNo } from '../src/modules/orders/order-no.js';
import {
  adminAuth,
  bearer,
  consistentReconcile,
  counter,
  createSale,
  startApp,
  Stores,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { buyUntilReopened, PrivateRedisCluster } from './support/private-redis.js';
import { allBuyers, bucketStocks, unsettled, usersHomed } from './support/stock-buckets.js';

describe("a hot item's stock split over buckets, on a Redis Cluster of three masters", () => {
  let cluster: PrivateRedisCluster;
  let stores: Stores;
  let t: TestApp;

  beforeAll(async () => {
    cluster = await PrivateRedisCluster.start();
    stores = new Stores(cluster.client());
    // New goods get 8 buckets unless told otherwise.
    t = await startApp({
      REDIS_CLUSTER_NODES: cluster.seeds,
      TRUSTED_PROXIES: '127.0.0.1',
      STOCK_SHARDS: '8',
      REDIS_WATCH_INTERVAL_MS: '200',
    });
  });

  afterAll(async () => {
    await t?.close();
    await stores?.close();
    await cluster?.stop();
  });

  const buy = (goodsId: number, userId: number) =>
    t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .set('X-Forwarded-For', `10.2.${(userId >> 8) & 255}.${userId & 255}`);

  /** Waits for `count` orders with nothing unsettled; they are exactly the accepted buyers'. */
  async function expectOrdersOf(goodsId: number, accepted: { userId: number }[], count: number) {
    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length >= count && (await unsettled(stores.redis, goodsId, 8)) === 0
          ? rows
          : null;
      },
      { timeoutMs: 60_000, what: `${count} orders and nothing unsettled` },
    );
    expect(orders).toHaveLength(count);
    expect(new Set(orders.map((order) => Number(order.user_id)))).toEqual(
      new Set(accepted.map((answer) => answer.userId)),
    );
  }

  /** Every unit sold: nothing unsettled, no bucket holding any stock, the stores agreeing. */
  async function expectAllSold(goodsId: number, shards: number, buyers: number) {
    await waitFor(async () => (await unsettled(stores.redis, goodsId, shards)) === 0, {
      timeoutMs: 30_000,
      what: 'every purchase settled',
    });
    expect(await bucketStocks(stores.redis, goodsId, shards)).toEqual(new Array(shards).fill(0));
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 0,
      dbStock: 0,
      buyers,
      inFlight: 0,
    });
  }

  it('should sell exactly 500 of 500 in 8 buckets to 2,000 users (some double-clicking), one per user, none stranded in a bucket, and reconcile consistent', async () => {
    const goodsId = await createSale(t.http, { stock: 500 });
    const view = await t.http.get(`/api/v1/goods/${goodsId}`).expect(200);
    expect(view.body).toMatchObject({ stockShards: 8, remaining: 500 });
    const masters = new Set(
      await Promise.all(allBucketKeys(goodsId, 8).map((keys) => cluster.masterOf(keys.stock))),
    );
    expect(masters.size).toBeGreaterThan(1);
    // Split evenly, the remainder to the first buckets.
    expect(await bucketStocks(stores.redis, goodsId, 8)).toEqual([63, 63, 63, 63, 62, 62, 62, 62]);

    const users = Array.from({ length: 2_000 }, (_, i) => 70_000 + i);
    const answers = await Promise.all(
      users.flatMap((userId) =>
        (userId % 4 === 0 ? [0, 1] : [0]).map(() =>
          buy(goodsId, userId).then((response) => ({
            userId,
            status: response.status,
            code: response.body.code as string | undefined,
          })),
        ),
      ),
    );

    const accepted = answers.filter((answer) => answer.status === 202);
    expect(accepted).toHaveLength(500);
    expect(new Set(accepted.map((answer) => answer.userId)).size).toBe(500);
    for (const refused of answers.filter((answer) => answer.status !== 202)) {
      expect(['SOLD_OUT', 'ALREADY_PURCHASED', 'DUPLICATE_REQUEST']).toContain(refused.code);
    }
    await expectOrdersOf(goodsId, accepted, 500);
    await expectAllSold(goodsId, 8, 500);
    const buyers = await allBuyers(stores.redis, goodsId, 8);
    expect(Object.keys(buyers)).toHaveLength(500);
    // Each buyer is written down in the home bucket only.
    for (const [bucket, keys] of allBucketKeys(goodsId, 8).entries()) {
      for (const userId of Object.keys(await stores.redis.hgetall(keys.buyers))) {
        expect(homeBucket(Number(userId), 8)).toBe(bucket);
      }
    }
    expect((await buy(goodsId, 79_999).expect(409)).body.code).toBe('SOLD_OUT');
  });

  it("should sell the other buckets' stock to buyers who all share one home bucket, then answer SOLD_OUT", async () => {
    const goodsId = await createSale(t.http, { stock: 8, stockShards: 4 });
    const [first, ...rest] = usersHomed(80_000, 9, 4, (home) => home === 0);
    const takenBefore = await counter(t.app, 'seckill_stock_loans_total', 'taken');

    await buy(goodsId, first).expect(202);
    for (const userId of rest.slice(0, 7)) await buy(goodsId, userId).expect(202);
    expect((await buy(goodsId, rest[7]).expect(409)).body.code).toBe('SOLD_OUT');

    // Bucket 0 held 2; the other 6 were borrowed from buckets 1 to 3.
    expect(await counter(t.app, 'seckill_stock_loans_total', 'taken')).toBe(takenBefore + 6);
    await expectAllSold(goodsId, 4, 8);
    expect(Object.keys(await stores.redis.hgetall(bucketKeys(goodsId, 4, 0).buyers))).toHaveLength(
      8,
    );
  });

  it('should sell stock that a cancel gives back to a buyer whose home bucket is empty', async () => {
    const goodsId = await createSale(t.http, { stock: 4, stockShards: 4 });
    const buyers = [81_001, 81_002, 81_003, 81_004];
    for (const userId of buyers) await buy(goodsId, userId).expect(202);
    const orders = await waitFor(async () => {
      const rows = await stores.orders(goodsId);
      return rows.length === 4 ? rows : null;
    });
    const cancelled = orders[0];
    const latecomer = usersHomed(
      81_100,
      1,
      4,
      (home) => home !== homeBucket(Number(cancelled.user_id), 4),
    )[0];
    expect((await buy(goodsId, latecomer).expect(409)).body.code).toBe('SOLD_OUT');

    await t.http
      .post(`/api/v1/orders/${cancelled.order_no}/cancel`)
      .set('Authorization', bearer(Number(cancelled.user_id)))
      .expect(200);
    // Back in the canceller's home bucket, not the latecomer's.
    await waitFor(async () => {
      const stocks = await bucketStocks(stores.redis, goodsId, 4);
      return stocks[homeBucket(Number(cancelled.user_id), 4)] === 1;
    });
    await waitFor(async () => (await buy(goodsId, latecomer)).status === 202, {
      what: 'the returned unit sold to the latecomer',
    });
    await waitFor(async () => (await stores.orders(goodsId)).length === 5);
    await expectAllSold(goodsId, 4, 4);
  });

  it('should give back, exactly once, a loan whose purchase was never recorded, and then refuse its late record', async () => {
    const goodsId = await createSale(t.http, { stock: 8, stockShards: 4 });
    const [ledger, loans] = [t.app.get(LedgerScripts), t.app.get(LoanScripts)];
    const userId = 82_001;
    const home = homeBucket(userId, 4);
    const lenderBucket = bucketOrder(userId, 4)[0];
    const lender = bucketKeys(goodsId, 4, lenderBucket);
    const requestId = randomUUID();

    // The loan step of a purchase whose instance then died: stock taken, nothing recorded.
    expect((await loans.loan(lender, requestId, 1, userId, home)).code).toBe(LoanCode.Lent);
    expect((await bucketStocks(stores.redis, goodsId, 4))[lenderBucket]).toBe(1);
    // Taken stock on its way: reconcile counts it in flight.
    const during = await consistentReconcile(t.http, goodsId);
    expect(during).toMatchObject({ redisStock: 7, inFlight: 1 });

    const sweptBefore = await counter(t.app, 'seckill_stock_loans_total', 'swept');
    const sweeper = t.app.get(OutboxSweeperService);
    // As if the purchase lock had long expired.
    await sweeper.sweep(Date.now() + 60_000);
    await sweeper.sweep(Date.now() + 60_000);
    expect(await counter(t.app, 'seckill_stock_loans_total', 'swept')).toBe(sweptBefore + 1);
    expect(await bucketStocks(stores.redis, goodsId, 4)).toEqual([2, 2, 2, 2]);
    expect(await stores.redis.hlen(lender.loans)).toBe(0);

    const order = {
      requestId,
      orderNo: newOrderNo(),
      userId,
      goodsId,
      quantity: 1,
      acceptedAt: Date.now(),
    };
    const late = await ledger.deduct(
      bucketKeys(goodsId, 4, home),
      userId,
      1,
      requestId,
      encodeOrderMessage(order),
      lenderBucket,
    );
    expect(late.code).toBe(DeductCode.Voided);
    expect(await allBuyers(stores.redis, goodsId, 4)).toEqual({});
    // The buyer's own next click is a new purchase.
    await buy(goodsId, userId).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 7,
      dbStock: 7,
      buyers: 1,
    });
  });

  it('should refuse a bad stockShards with the contract error and create nothing', async () => {
    for (const stockShards of [0, 65, 'x', 1.5]) {
      const name = `Bad shards ${randomUUID()}`;
      const response = await t.http
        .post('/api/v1/admin/goods')
        .set('Authorization', adminAuth())
        .send({
          name,
          price: 1,
          stock: 10,
          startAt: '2030-01-01T00:00:00Z',
          endAt: '2030-01-02T00:00:00Z',
          stockShards,
        })
        .expect(400);
      expect(response.body.code).toBe('VALIDATION_FAILED');
      const [rows] = await stores.mysql.query<RowDataPacket[]>(
        'SELECT COUNT(*) AS n FROM seckill_goods WHERE name = ?',
        [name],
      );
      expect(Number(rows[0].n)).toBe(0);
    }
  });

  it('should sell exactly the stock while repairs rebuild the buckets under a borrowing crowd, answering only 202, 409 or 503', async () => {
    const goodsId = await createSale(t.http, { stock: 300 });
    // Most buyers share bucket 0 (38 units): the rest of their units are borrowed.
    const users = [
      ...usersHomed(90_000, 900, 8, (home) => home === 0),
      ...usersHomed(95_000, 100, 8, (home) => home !== 0),
    ];
    const answers: { userId: number; status: number; code?: string }[] = [];
    let crowdDone = false;
    // 25 buyers at a time, one after the other: the selling lasts, and the repairs land in it.
    const waiting = [...users];
    const crowd = Promise.all(
      Array.from({ length: 25 }, async () => {
        for (let userId = waiting.shift(); userId !== undefined; userId = waiting.shift()) {
          // A 503 (the sale being repaired) or a click still holding the lock: the buyer clicks
          // again, within the per-user rate limit.
          await waitFor(
            async () => {
              const response = await buy(goodsId, userId);
              const code = response.body.code as string | undefined;
              answers.push({ userId, status: response.status, code });
              return response.status !== 503 && code !== 'DUPLICATE_REQUEST';
            },
            { intervalMs: 250, timeoutMs: 60_000, what: `an answer to buyer ${userId}` },
          );
        }
      }),
    ).finally(() => (crowdDone = true));
    const repairs: number[] = [];
    while (!crowdDone) {
      const response = await t.http
        .post(`/api/v1/admin/goods/${goodsId}/reconcile/repair`)
        .set('Authorization', adminAuth());
      repairs.push(response.status);
    }
    await crowd;

    expect(repairs.length).toBeGreaterThanOrEqual(3);
    expect(new Set(repairs)).toEqual(new Set([200]));
    for (const answer of answers) {
      expect([202, 409, 503]).toContain(answer.status);
      if (answer.status === 503) expect(answer.code).toBe('UNAVAILABLE');
    }
    const accepted = answers.filter((answer) => answer.status === 202);
    expect(accepted).toHaveLength(300);
    expect(new Set(accepted.map((answer) => answer.userId)).size).toBe(300);
    await expectOrdersOf(goodsId, accepted, 300);
    await expectAllSold(goodsId, 8, 300);
    // No freeze left behind: the next buyer is told SOLD_OUT, not 503.
    expect((await buy(goodsId, 99_999).expect(409)).body.code).toBe('SOLD_OUT');
  });

  // Last in this block: it restarts a master.
  it('should close the whole goods when a master holding one of its buckets restarts empty, and rebuild every bucket from MySQL', async () => {
    const goodsId = await createSale(t.http, { stock: 16, stockShards: 4 });
    const master = await cluster.masterOf(bucketKeys(goodsId, 4, 0).stock);
    const first = [84_001, 84_002, 84_003, 84_004, 84_005];
    for (const userId of first) await buy(goodsId, userId).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 5, { what: 'five orders' });

    await cluster.kill(master);
    expect((await buy(goodsId, 84_006).expect(503)).body.code).toBe('UNAVAILABLE');
    await cluster.up(master); // empty: the buckets it held are gone, the others survived
    await buyUntilReopened((userId) => buy(goodsId, userId), 84_006);

    expect((await buy(goodsId, first[0]).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    await waitFor(async () => (await stores.orders(goodsId)).length === 6, { what: 'six orders' });
    await waitFor(async () => (await unsettled(stores.redis, goodsId, 4)) === 0, {
      what: 'every purchase settled',
    });
    const stocks = (await bucketStocks(stores.redis, goodsId, 4)) as number[];
    expect(stocks.reduce((sum, stock) => sum + stock, 0)).toBe(10);
    expect(Object.keys(await allBuyers(stores.redis, goodsId, 4))).toHaveLength(6);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 10,
      dbStock: 10,
      buyers: 6,
      inFlight: 0,
    });
  });
});
