import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Redis } from 'ioredis';
import type { RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FaultInjectorService,
  type PauseAt,
  type PausePoint,
} from '../src/config/fault-injector.service.js';
import { allBucketKeys, saleKeys } from '../src/infra/redis/seckill-keys.js';
import { SaleBoardService } from '../src/modules/dashboard/sale-board.service.js';
import { MetricsService } from '../src/modules/metrics/metrics.service.js';
import {
  acceptWithoutPublishing,
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
import { buyUntilReopened, PrivateRedis } from './support/private-redis.js';
import { allBuyers, bucketStocks } from './support/stock-buckets.js';

/** seckill_purchases_total for this outcome and mode, from the app's registry. */
async function purchases(app: NestFastifyApplication, outcome: string, mode: string) {
  const metric = await app.get(MetricsService).purchases.get();
  return (
    metric.values.find((v) => v.labels.outcome === outcome && v.labels.mode === mode)?.value ?? 0
  );
}

/** A hold at a step (FaultInjectorService.holdAt), with whether a call has reached it yet. */
function holdAt(app: NestFastifyApplication, point: PausePoint, at: PauseAt) {
  const hold = app.get(FaultInjectorService).holdAt(point, at);
  const seen = { reached: false, release: hold.release };
  void hold.reached.then(() => (seen.reached = true));
  return seen;
}

/** Times a path was refused the goods' sale-state lock (0 where the lock does not exist). */
const lockBusy = (app: NestFastifyApplication, path: string) =>
  counter(app, 'seckill_sale_state_lock_busy_total', path);

/** An app on a private Redis the test kills and restarts empty, with direct reads of it. */
function useAppOnPrivateRedis(env: Record<string, string>) {
  const app = {} as { redis: PrivateRedis; t: TestApp; stores: Stores; local: Stores };
  app.stores = new Stores();
  beforeAll(async () => {
    app.redis = await PrivateRedis.start();
    // Its reconnect errors while the test has the server down are expected.
    app.local = new Stores(new Redis(app.redis.url).on('error', () => undefined));
    app.t = await startApp({ REDIS_URL: app.redis.url, REDIS_WATCH_INTERVAL_MS: '200', ...env });
  });
  afterAll(async () => {
    await app.t.close();
    await app.redis.kill();
    await app.local.close();
    await app.stores.close();
  });
  return app;
}

const buyer = (t: TestApp, goodsId: number, userId: number) =>
  t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));

/** Sells to each of `userIds` (orders written), then cancels the last one's order; returns it. */
async function soldThenOneCancelled(
  t: TestApp,
  stores: Stores,
  goodsId: number,
  userIds: number[],
) {
  for (const userId of userIds) await buyer(t, goodsId, userId).expect(202);
  const orders = await waitFor(async () => {
    const rows = await stores.orders(goodsId);
    return rows.length === userIds.length ? rows : null;
  });
  const cancelled = orders.find((order) => Number(order.user_id) === userIds.at(-1))!;
  await t.http
    .post(`/api/v1/orders/${cancelled.order_no}/cancel`)
    .set('Authorization', bearer(userIds.at(-1)!))
    .expect(200);
  return cancelled;
}

/** The buyer's first answer that is not a 503: the sale is back in Redis (or sold in MySQL). */
const answerOnceReopened = (t: TestApp, goodsId: number, userId: number) =>
  waitFor(
    async () => {
      const answer = await buyer(t, goodsId, userId);
      return answer.status === 503 ? null : answer;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: 'an answer from the rebuilt Redis' },
  );

describe('Redis restarts empty in database mode: the fallback return and the restart rebuild on one goods', () => {
  // The barrier's fixed wait keeps the restart's rebuild from loading before the return's first
  // tick (every 500 ms) has read the mark.
  const app = useAppOnPrivateRedis({
    REDIS_DOWN_MODE: 'database',
    PUBLISH_CONFIRM_TIMEOUT_MS: '3000',
    // One buyer asks every 100 ms until the rebuilt Redis answers.
    THROTTLE_PURCHASE_USER_LIMIT: '0',
  });

  it('should keep the rebuilt buyers and cancelled orders in Redis when the return read the stale mark before the rebuild cleared it', async () => {
    const { t, stores, local } = app;
    const goodsId = await createSale(t.http, { stock: 10 });
    const cancelled = await soldThenOneCancelled(t, stores, goodsId, [90_001, 90_002, 90_003]);

    // The restart's rebuild goes through every open sale of the shared database (earlier files'
    // too) before this one: they are over.
    await stores.endOtherSales(goodsId);
    // Redis dies; MySQL sells two more (the goods is marked redis_stale).
    await app.redis.kill();
    for (const userId of [90_004, 90_005]) {
      await waitFor(async () => (await buyer(t, goodsId, userId)).status === 202, {
        intervalMs: 200,
        what: `a sale through MySQL to ${userId}`,
      });
    }

    const returning = holdAt(t.app, 'fallback-return-stale-read', { goodsId });
    const loading = holdAt(t.app, 'preheat-before-stock', { goodsId });
    const refusedBefore = await lockBusy(t.app, 'preheat');
    await app.redis.up(); // empty: both the restart's rebuild and the fallback's return start
    await waitFor(() => returning.reached, { what: 'the return to read redis_stale = 1' });
    // The restart's rebuild either reads its history and stops before it writes (a lock of its
    // own), or is refused the lock the return holds.
    await waitFor(
      async () => loading.reached || (await lockBusy(t.app, 'preheat')) > refusedBefore,
      { what: 'the rebuild to load the buyers, or to be refused the lock' },
    );
    const rebuildLoadedFirst = loading.reached;
    returning.release();
    if (rebuildLoadedFirst) {
      // What the return does with the rebuild's buyers, before the rebuild writes the stock.
      await waitFor(async () => (await local.redis.exists(saleKeys(goodsId).buyers)) === 0, {
        what: "the return's wipe",
      });
    }
    loading.release();

    const report = await waitFor(
      async () => {
        const body = await consistentReconcile(t.http, goodsId);
        return body.inFlight === 0 ? body : null;
      },
      { timeoutMs: 30_000, what: 'a consistent reconcile on the rebuilt Redis' },
    );
    expect(report).toMatchObject({ redisStock: 6, dbStock: 6, buyers: 4 });
    expect(Object.keys(await local.redisBuyers(goodsId)).sort()).toEqual(
      ['90001', '90002', '90004', '90005'].sort(),
    );
    expect(await local.redis.sismember(saleKeys(goodsId).restocked, cancelled.order_no)).toBe(1);
    // A buyer from before is refused by the rebuilt Redis itself, not accepted again.
    const refusedByRedis = await purchases(t.app, 'ALREADY_PURCHASED', 'redis');
    const again = await answerOnceReopened(t, goodsId, 90_001);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
    expect(await purchases(t.app, 'ALREADY_PURCHASED', 'redis')).toBeGreaterThan(refusedByRedis);
    expect(await stores.orders(goodsId)).toHaveLength(5);
  });
});

describe('a rebuild of a goods split over buckets, whose premise changed while it waited for the lock', () => {
  // The outbox sweeper publishes a purchase the broker has not confirmed after 3 s.
  const app = useAppOnPrivateRedis({
    PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
    OUTBOX_SWEEP_ENABLED: 'true',
    OUTBOX_SWEEP_INTERVAL_MS: '500',
    OUTBOX_STALE_MS: '3000',
  });

  it('should not wipe the live sale another path rebuilt meanwhile, nor the purchases it accepted since', async () => {
    const { t, stores, local } = app;
    const goodsId = await createSale(t.http, { stock: 20, stockShards: 4 });
    for (const userId of [91_001, 91_002, 91_003]) await buyer(t, goodsId, userId).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 3, { what: '3 orders' });

    // The restart's rebuild, held below on this sale, would hold back the other open sales'
    // (earlier tests') too, and with them the reopening: they are over.
    await stores.endOtherSales(goodsId);
    // The restart's rebuild found the sale missing, then waits before taking the lock.
    const late = holdAt(t.app, 'before-sale-lock', { goodsId, path: 'preheat' });
    await app.redis.kill();
    await app.redis.up(); // empty
    await waitFor(() => late.reached, { what: "the restart's rebuild to find the sale missing" });

    // Meanwhile another path (an operator's preheat) rebuilds it, and the sale goes on.
    await waitFor(
      async () =>
        (
          await t.http
            .post(`/api/v1/admin/goods/${goodsId}/preheat`)
            .set('Authorization', adminAuth())
        ).status === 200,
      { timeoutMs: 30_000, intervalMs: 200, what: 'the preheat to rebuild the sale' },
    );
    await buyUntilReopened((userId) => buyer(t, goodsId, userId), 91_004);
    await waitFor(async () => (await stores.orders(goodsId)).length === 4, { what: '4 orders' });
    // A purchase Redis accepted whose message is not in the broker yet (its publish is late).
    const gap = await acceptWithoutPublishing(t.app, goodsId, 91_005);

    late.release();
    // It is written once the sweeper publishes it: the live sale and its outbox were kept.
    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.some((row) => row.request_id === gap.requestId) ? rows : null;
      },
      { timeoutMs: 20_000, what: 'the order of the purchase accepted in the gap' },
    );
    expect(orders).toHaveLength(5);
    const stocks = (await bucketStocks(local.redis, goodsId, 4)) as number[];
    expect(stocks.reduce((sum, stock) => sum + stock, 0)).toBe(15);
    expect(Object.keys(await allBuyers(local.redis, goodsId, 4)).sort()).toEqual(
      ['91001', '91002', '91003', '91004', '91005'].sort(),
    );
    expect((await buyer(t, goodsId, 91_005).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    const report = await waitFor(async () => {
      const body = await consistentReconcile(t.http, goodsId);
      return body.inFlight === 0 ? body : null;
    });
    expect(report).toMatchObject({ redisStock: 15, dbStock: 15, buyers: 5 });
  });
});

describe('reconcile and the dashboard of a sale Redis does not hold', () => {
  const app = useAppOnPrivateRedis({});
  const reconcile = async (goodsId: number) =>
    (
      await app.t.http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth())
        .expect(200)
    ).body as Record<string, unknown>;

  it('should answer NOT_LOADED and not consistent for a sold-out sale right after Redis came back empty', async () => {
    const { t, stores } = app;
    const goodsId = await createSale(t.http, { stock: 2 });
    for (const userId of [92_001, 92_002]) await buyer(t, goodsId, userId).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 2, { what: '2 orders' });
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisState: 'LOADED',
      redisStock: 0,
    });

    // Held before its lock: the restart's rebuild does not load the sale while the test reads.
    const rebuild = holdAt(t.app, 'before-sale-lock', { goodsId, path: 'preheat' });
    await app.redis.kill();
    await app.redis.up(); // empty
    try {
      await waitFor(() => rebuild.reached, { what: "the restart's rebuild" });
      expect(await reconcile(goodsId)).toMatchObject({
        redisState: 'NOT_LOADED',
        redisStock: null,
        consistent: false,
        dbStock: 0,
      });
    } finally {
      rebuild.release();
    }
    await waitFor(async () => (await reconcile(goodsId)).redisState === 'LOADED', {
      timeoutMs: 30_000,
      what: 'the rebuild',
    });
  });

  it('should not count a stock key without the sale (no meta: a purchase is NOT_PREHEATED) as loaded, in the reconcile or on the dashboard card', async () => {
    const { t, stores, local } = app;
    const goodsId = await createSale(t.http, { stock: 2 });
    // The restart of the test before may still hold purchases back (every open sale rebuilt).
    await buyUntilReopened((userId) => buyer(t, goodsId, userId), 93_001);
    await buyer(t, goodsId, 93_002).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 2, { what: '2 orders' });
    await consistentReconcile(t.http, goodsId);
    // The dashboard's stored verdict: consistent, with a refresh claim held for a minute (as
    // by an instance that took it and stalled).
    const board = t.app.get(SaleBoardService);
    const card = async () => (await board.build()).sales.find((sale) => sale.id === goodsId)!;
    await waitFor(async () => (await card()).verdict?.consistent === true, {
      what: 'a consistent verdict on the card',
    });
    const keys = saleKeys(goodsId);
    await local.redis.set(keys.verdictClaim, '1', 'PX', 60_000);

    // Redis keeps the stock key (0, sold out) but no longer the sale.
    await local.redis.del(...allBucketKeys(goodsId, 1).map((bucket) => bucket.meta));
    expect((await buyer(t, goodsId, 93_003).expect(409)).body.code).toBe('NOT_PREHEATED');
    expect(await reconcile(goodsId)).toMatchObject({
      redisState: 'NOT_LOADED',
      redisStock: null,
      consistent: false,
    });
    const shown = await card();
    expect(shown.preheated).toBe(false);
    expect(shown.verdict).toMatchObject({ consistent: false, redisState: 'NOT_LOADED' });
  });
});

describe('a cancel that commits while a rebuild loads the sale into Redis', () => {
  // The reconcile job would give a lost restock back after a while: off, so the test sees what
  // the rebuild itself leaves.
  const app = useAppOnPrivateRedis({ RECONCILE_ENABLED: 'false' });

  it("should give the cancelled order's stock back in Redis as soon as the sale is loaded", async () => {
    const { t, stores, local } = app;
    const goodsId = await createSale(t.http, { stock: 10 });
    for (const userId of [94_001, 94_002]) await buyer(t, goodsId, userId).expect(202);
    const orders = await waitFor(async () => {
      const rows = await stores.orders(goodsId);
      return rows.length === 2 ? rows : null;
    });
    const cancelled = orders.find((order) => Number(order.user_id) === 94_002)!;

    await stores.endOtherSales(goodsId);
    // The restart's rebuild has read MySQL's orders (both active) and written the buyers, not
    // yet the stock.
    const loading = holdAt(t.app, 'preheat-before-stock', { goodsId });
    await app.redis.kill();
    await app.redis.up(); // empty
    await waitFor(() => loading.reached, { timeoutMs: 30_000, what: 'the rebuild to load' });

    const cancel = t.http
      .post(`/api/v1/orders/${cancelled.order_no}/cancel`)
      .set('Authorization', bearer(94_002))
      .then((response) => response);
    const answered = { done: false };
    void cancel.then(() => (answered.done = true));
    // The cancel has answered, or waits in MySQL for the rebuild's snapshot to end.
    await waitFor(
      async () => {
        if (answered.done) return true;
        const [rows] = await stores.mysql.query<RowDataPacket[]>(
          'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ?',
          [`UPDATE seckill_goods SET stock = stock + % WHERE id = ${goodsId}`],
        );
        return Number(rows[0]?.n) > 0;
      },
      { what: 'the cancel to reach MySQL' },
    );
    loading.release();
    expect((await cancel).status).toBe(200);

    const keys = saleKeys(goodsId);
    await waitFor(async () => (await local.redis.exists(keys.stock, keys.meta)) === 2, {
      what: 'the sale loaded',
    });
    const [[goods]] = await stores.mysql.query<RowDataPacket[]>(
      'SELECT stock FROM seckill_goods WHERE id = ?',
      [goodsId],
    );
    expect(Number(goods?.stock)).toBe(9);
    expect(Number(await local.redis.get(keys.stock))).toBe(9);
    expect(await local.redisBuyers(goodsId)).toEqual({ '94001': '1' });
    expect(await local.redis.sismember(keys.restocked, cancelled.order_no)).toBe(1);
  });
});

describe('Redis restarting again while a rebuild loads a sale', () => {
  const app = useAppOnPrivateRedis({
    RECONCILE_ENABLED: 'false',
    // One buyer asks every 100 ms until the rebuilt Redis answers: past five a second the
    // per-user limit would answer 429 instead.
    THROTTLE_PURCHASE_USER_LIMIT: '0',
  });

  it('should not leave the new Redis a stock without the buyers the load wrote into the old one', async () => {
    const { t, stores, local } = app;
    const goodsId = await createSale(t.http, { stock: 10 });
    for (const userId of [95_001, 95_002]) await buyer(t, goodsId, userId).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 2, {
      what: 'both orders written',
    });

    await stores.endOtherSales(goodsId);
    // The restart's rebuild has read MySQL's orders and is loading them.
    const loading = holdAt(t.app, 'preheat-before-stock', { goodsId });
    await app.redis.kill();
    await app.redis.up(); // empty
    await waitFor(() => loading.reached, { timeoutMs: 30_000, what: 'the rebuild to load' });
    // Redis restarts empty again: the next rebuild wipes the sale (a key planted here goes)
    // before the first load ends, which then lands in this server.
    await app.redis.kill();
    await app.redis.up();
    const keys = saleKeys(goodsId);
    await local.redis.set(keys.stock, '999');
    await waitFor(async () => (await local.redis.exists(keys.stock)) === 0, {
      timeoutMs: 30_000,
      what: "the next rebuild's wipe",
    });
    loading.release();

    await waitFor(async () => (await local.redis.exists(keys.stock, keys.meta)) === 2, {
      timeoutMs: 30_000,
      what: 'the sale loaded',
    });
    expect(await local.redisBuyers(goodsId)).toEqual({ '95001': '1', '95002': '1' });
    // Redis itself refuses an earlier buyer: no second order to turn FAILED in MySQL.
    const again = await answerOnceReopened(t, goodsId, 95_001);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
  });
});

describe('Redis restarting empty while a preheat refreshes a sale it found loaded', () => {
  // The restart's rebuild waits 3 s after its wipe for the purchases before it: the refresh
  // lands in the empty Redis before the rebuild loads.
  const app = useAppOnPrivateRedis({
    RECONCILE_ENABLED: 'false',
    PUBLISH_CONFIRM_TIMEOUT_MS: '3000',
    // One buyer asks every 100 ms until the rebuilt Redis answers.
    THROTTLE_PURCHASE_USER_LIMIT: '0',
  });

  it('should write nothing into the empty Redis, and leave the sale to the rebuild that brings its buyers and cancelled orders', async () => {
    const { t, stores, local } = app;
    const goodsId = await createSale(t.http, { stock: 10 });
    const cancelled = await soldThenOneCancelled(t, stores, goodsId, [96_001, 96_002]);
    await stores.endOtherSales(goodsId);

    // An operator's preheat finds the sale loaded, and is about to refresh it.
    const refreshing = holdAt(t.app, 'preheat-before-stock', { goodsId });
    const preheat = t.http
      .post(`/api/v1/admin/goods/${goodsId}/preheat`)
      .set('Authorization', adminAuth())
      .then((response) => response);
    await waitFor(() => refreshing.reached, { what: 'the preheat to find the sale loaded' });

    // Redis restarts empty (the preheat's lock goes with it); the restart's rebuild wipes the
    // sale (a key planted here goes) and waits for the purchases before it.
    const rebuild = holdAt(t.app, 'before-sale-lock', { goodsId, path: 'preheat' });
    await app.redis.kill();
    await app.redis.up();
    await waitFor(() => rebuild.reached, { timeoutMs: 30_000, what: "the restart's rebuild" });
    const keys = saleKeys(goodsId);
    await local.redis.hset(keys.buyers, '1', '1');
    rebuild.release();
    await waitFor(async () => (await local.redis.exists(keys.buyers)) === 0, {
      what: "the rebuild's wipe",
    });
    refreshing.release();

    const refused = await preheat;
    expect(`${refused.status} ${refused.body.code}`).toBe('503 UNAVAILABLE');
    expect(await local.redis.exists(keys.stock)).toBe(0);
    // The rebuild loads it with its history: the buyer from before is refused by Redis, and the
    // cancelled order's stock is not given back again.
    const again = await answerOnceReopened(t, goodsId, 96_001);
    expect(`${again.status} ${again.body.code}`).toBe('409 ALREADY_PURCHASED');
    expect(await local.redisBuyers(goodsId)).toEqual({ '96001': '1' });
    expect(await local.redis.sismember(keys.restocked, cancelled.order_no)).toBe(1);
    expect(Number(await local.redis.get(keys.stock))).toBe(9);
    expect(await stores.orders(goodsId)).toHaveLength(2);
  });
});
