import { Redis } from 'ioredis';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordChaos, secondsSince } from './support/chaos-report.js';
import {
  adminAuth,
  bearer,
  consistentReconcile,
  createSale,
  purchaseResult,
  startApp,
  Stores,
  waitFor,
  type TestApp,
} from './support/harness.js';
import {
  buyUntilReopened,
  PrivateRedis,
  restartFromStaleSnapshot,
} from './support/private-redis.js';
import { bucketStocks, usersHomed } from './support/stock-buckets.js';
import { FaultInjectorService } from '../src/config/fault-injector.service.js';
import { RedisLocksService } from '../src/infra/redis/redis-locks.service.js';
import { bucketKeys, jobLockKey } from '../src/infra/redis/seckill-keys.js';

describe('faults: Redis restarts empty during a sale', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    t = await startApp({ REDIS_URL: redis.url, REDIS_WATCH_INTERVAL_MS: '200' });
  });

  afterAll(async () => {
    await t.close();
    await redis.kill();
    await stores.close();
  });

  it('should sell nothing until the sale is rebuilt from MySQL, then go on without selling twice', async () => {
    const goodsId = await createSale(t.http, { stock: 20 });
    for (const userId of [501, 502, 503, 504, 505]) {
      await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId))
        .expect(202);
    }
    await waitFor(async () => (await stores.orders(goodsId)).length === 5, { what: 'five orders' });

    // The restart's rebuild goes through every open sale of the shared database first.
    await stores.endOtherSales(goodsId);
    await redis.kill();
    const down = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(506))
      .expect(503);
    expect(down.body.code).toBe('UNAVAILABLE');

    await redis.up(); // empty: the sale, its buyers and its outbox are gone
    const healedAt = Date.now();
    // Until then every answer kept the sale closed and took nothing.
    const reopenRequests = await buyUntilReopened(
      (userId) => t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId)),
      506,
    );

    const recoveredSeconds = secondsSince(healedAt);
    const again = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(501))
      .expect(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
    const orders = await waitFor(async () => {
      const rows = await stores.orders(goodsId);
      return rows.length === 6 ? rows : null;
    });
    expect(new Set(orders.map((order) => Number(order.user_id))).size).toBe(6);
    await recordChaos(stores, {
      scenario: 'Redis restarted empty',
      fault: 'redis-server SIGKILLed mid-sale, restarted with no data',
      goodsId,
      requests: 5 + 1 + reopenRequests + 1,
      accepted: 6,
      recoveredSeconds,
    });
    const report = await consistentReconcile(t.http, goodsId);
    expect(report).toMatchObject({ redisStock: 14, dbStock: 14, buyers: 6, inFlight: 0 });
  });

  it('should rebuild every bucket from MySQL: the stock left split over the buckets, each buyer in the home bucket', async () => {
    const goodsId = await createSale(t.http, { stock: 20, stockShards: 4 });
    const buy = (userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    // Five buyers of one home bucket: three of their units are borrowed from other buckets.
    const buyers = usersHomed(83_000, 6, 4, (home) => home === 1);
    for (const userId of buyers.slice(0, 5)) await buy(userId).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 5, { what: 'five orders' });

    // The restart's rebuild goes through every open sale of the shared database first.
    await stores.endOtherSales(goodsId);
    await redis.kill();
    await redis.up(); // empty
    await buyUntilReopened(buy, buyers[5]);
    expect((await buy(buyers[0]).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    await waitFor(async () => (await stores.orders(goodsId)).length === 6, { what: 'six orders' });

    const local = new Stores(new Redis(redis.url));
    try {
      const stocks = await bucketStocks(local.redis, goodsId, 4);
      expect(stocks.reduce((sum, stock) => sum! + stock!, 0)).toBe(14);
      expect(
        Math.max(...(stocks as number[])) - Math.min(...(stocks as number[])),
      ).toBeLessThanOrEqual(1);
      expect(
        Object.keys(await local.redis.hgetall(bucketKeys(goodsId, 4, 1).buyers)).sort(),
      ).toEqual(buyers.map(String).sort());
    } finally {
      await local.close();
    }
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 14,
      dbStock: 14,
      buyers: 6,
      inFlight: 0,
    });
  });
});

describe('faults: Redis comes back with a stale snapshot', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start({ dir: mkdtempSync(join(tmpdir(), 'seckill-redis-')) });
    t = await startApp({ REDIS_URL: redis.url, REDIS_WATCH_INTERVAL_MS: '200' });
  });

  afterAll(async () => {
    await t.close();
    await redis.kill();
    await stores.close();
  });

  it('should rebuild the sale from MySQL instead of trusting what survived', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const buy = (userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    // Back with stock 7 and three buyers, where the truth is 5 and five.
    await restartFromStaleSnapshot(redis, stores, goodsId, buy, [511, 512, 513, 514, 515]);
    const healedAt = Date.now();
    const requests = 7 + (await buyUntilReopened(buy, 516));
    // A buyer the snapshot did not know is still refused; the stock is MySQL's.
    expect((await buy(514).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    const report = await waitFor(async () => {
      const response = await t.http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth())
        .expect(200);
      return response.body.consistent && response.body.inFlight === 0 ? response.body : null;
    });
    expect(report).toMatchObject({ redisStock: 4, dbStock: 4, buyers: 6 });
    await recordChaos(stores, {
      scenario: 'Redis back with an old snapshot',
      fault: 'redis-server SIGKILLed and restarted from a snapshot two purchases old',
      goodsId,
      requests: requests + 1,
      accepted: 6,
      recoveredSeconds: secondsSince(healedAt),
    });
  });

  it('should not wait out a sale-state lock the snapshot kept, even one taken just before it was saved', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const buy = (userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    expect((await buy(531)).status).toBe(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'an order' });
    // A path took the sale's lock (30 s, as every holder sets it) just before the snapshot was
    // taken and the server died: Redis's start in whole seconds could not tell it apart.
    const held = await t.app.get(RedisLocksService).tryLockJob(`sale-state:${goodsId}`, 30_000);
    expect(held).not.toBeNull();
    const expiresAt = Date.now() + 30_000;
    const direct = new Redis(redis.url);
    const lock = jobLockKey(`sale-state:${goodsId}`);
    const snapshotLock = await direct.get(lock);
    await direct.save();
    direct.disconnect();
    // The restart's rebuild goes through every open sale of the shared database first.
    await stores.endOtherSales(goodsId);
    await redis.kill();
    await redis.up();

    await buyUntilReopened(buy, 532);
    // Reopened, rebuilt under the lock, long before the snapshot's lock would have expired.
    expect(Date.now()).toBeLessThan(expiresAt);
    const after = new Redis(redis.url);
    expect(await after.get(lock)).not.toBe(snapshotLock);
    after.disconnect();
    expect((await buy(531).expect(409)).body.code).toBe('ALREADY_PURCHASED');
  });
});

describe('faults: Redis restarts empty before any order of the sale is written', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    t = await startApp({
      REDIS_URL: redis.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      REDIS_DOWN_MODE: 'closed',
      PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
    });
  });

  afterAll(async () => {
    await t.close();
    await redis.kill();
    await stores.close();
  });

  it('should not load the full stock again while the orders the lost Redis accepted are on their way to MySQL', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const buy = (userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    const preheat = () =>
      t.http.post(`/api/v1/admin/goods/${goodsId}/preheat`).set('Authorization', adminAuth());
    // Every consumer batch waits before its write: MySQL has no order of the sale.
    const writes = t.app.get(FaultInjectorService).holdAt('before-order-write');
    try {
      await buy(611).expect(202);
      await buy(612).expect(202);
      await writes.reached;

      // The restart's rebuild goes through every open sale of the shared database first.
      await stores.endOtherSales(goodsId);
      await redis.kill();
      await redis.up(); // empty: MySQL still says 2 of 2 left, and no orders
      // Once the restart is noticed, the preheat answers 200 (loaded) or what its rebuild waits for.
      const answer = await waitFor(
        async () => {
          const response = await preheat();
          return response.status === 200 || /on their way to MySQL/.test(response.body.message)
            ? response
            : null;
        },
        { what: 'the preheat after the restart to load the sale or wait for its orders' },
      );
      expect(answer.status).toBe(503);
      expect((await buy(613)).status).toBe(503);
    } finally {
      writes.release();
    }

    await waitFor(async () => (await preheat()).status === 200, { what: 'the sale rebuilt' });
    for (const userId of [611, 612]) {
      await waitFor(
        async () => (await purchaseResult(t.http, goodsId, userId)).status === 'SUCCESS',
        {
          what: `buyer ${userId}'s order`,
        },
      );
    }
    // The purchase path reopens once this instance sees every open sale back.
    const after = await waitFor(
      async () => {
        const response = await buy(613);
        return response.status === 503 ? null : response;
      },
      { intervalMs: 300, what: 'purchases to reopen' },
    );
    expect([after.status, after.body.code]).toEqual([409, 'SOLD_OUT']);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 0,
      dbStock: 0,
      inFlight: 0,
    });
  });
});
