import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanKeys } from '../src/infra/redis/redis-client.js';
import {
  RedisWatchdogService,
  type RedisRestart,
} from '../src/infra/redis/redis-watchdog.service.js';
import { queueKeys } from '../src/infra/redis/seckill-keys.js';
import { EventStreamClient } from './support/event-stream.js';
import { baseUrlOf } from './support/sse.js';
import {
  bearer,
  consistentReconcile,
  createSale,
  doubleClickCrowd,
  expectCrowdSold,
  ordersOnceSettled,
  startApp,
  Stores,
  waitFor,
  waitForSettled,
  type TestApp,
} from './support/harness.js';
import { recordChaos, secondsSince } from './support/chaos-report.js';
import {
  buyUntilReopened,
  newBuyersUntilAccepted,
  PrivateRedisCluster,
} from './support/private-redis.js';
import { TcpProxy } from './support/tcp-proxy.js';

/**
 * The service on a Redis Cluster of three masters that the test starts itself
 * (REDIS_CLUSTER_NODES): every Redis use goes through ioredis' Cluster client.
 */
/**
 * A private 3-master cluster for a describe block's tests, an app on it (with `env`) and the test's
 * own stores on it, started before them and stopped after.
 */
function onCluster(
  env: Record<string, string>,
  options: Parameters<typeof PrivateRedisCluster.start>[0] = {},
) {
  const ctx = {} as { cluster: PrivateRedisCluster; stores: Stores; t: TestApp };
  beforeAll(async () => {
    ctx.cluster = await PrivateRedisCluster.start(options);
    ctx.stores = new Stores(ctx.cluster.client());
    ctx.t = await startApp({ REDIS_CLUSTER_NODES: ctx.cluster.seeds, ...env });
  });
  afterAll(async () => {
    await ctx.t?.close();
    await ctx.stores?.close();
    await ctx.cluster?.stop();
  });
  return ctx;
}

/**
 * An app that reaches the cluster's nodes only through proxies (as behind NAT): one proxy given as
 * its seed, every node's own address mapped to its proxy by REDIS_CLUSTER_NAT_MAP.
 */
async function appBehindProxies(cluster: PrivateRedisCluster) {
  const proxies = await Promise.all(cluster.ports.map((port) => TcpProxy.start('127.0.0.1', port)));
  const app = await startApp({
    REDIS_CLUSTER_NODES: `127.0.0.1:${proxies[0].port}`,
    REDIS_CLUSTER_NAT_MAP: cluster.ports
      .map((port, i) => `127.0.0.1:${port}=127.0.0.1:${proxies[i].port}`)
      .join(','),
  });
  return { proxies, app };
}

describe('on a Redis Cluster of three masters', () => {
  const ctx = onCluster({ TRUSTED_PROXIES: '127.0.0.1' });

  it('should spread sales over the masters, each sale in one slot', async () => {
    const { cluster, stores, t } = ctx;
    const goodsIds = await Promise.all(
      Array.from({ length: 6 }, () => createSale(t.http, { stock: 1 })),
    );
    const masters = new Set(
      await Promise.all(goodsIds.map((id) => cluster.masterOf(`seckill:{${id}}:stock`))),
    );
    expect(masters.size).toBeGreaterThan(1);
    // SCAN walks every master: each sale's stock and meta are found.
    const keys = await scanKeys(stores.redis, 'seckill:{*}:meta');
    for (const id of goodsIds) expect(keys).toContain(`seckill:{${id}}:meta`);
  });

  it('should sell exactly 100 items to 100 distinct users when 1,000 users each click twice, rate limits on, and reconcile consistent', async () => {
    const { stores, t } = ctx;
    const stock = 100;
    const goodsId = await createSale(t.http, { stock });
    const users = Array.from({ length: 1_000 }, (_, i) => 60_000 + i);

    const responses = await doubleClickCrowd([t.http], goodsId, users);

    await expectCrowdSold(stores, goodsId, stock, responses);
    await waitForSettled(stores, goodsId);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await stores.redisStock(goodsId)).toBe(0);
    expect(Object.keys(await stores.redisBuyers(goodsId))).toHaveLength(stock);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      inFlight: 0,
      redisStock: 0,
      dbStock: 0,
    });
  });

  it('should take a purchase through payment, and give a cancelled one its stock back in both stores, once', async () => {
    const { stores, t } = ctx;
    const goodsId = await createSale(t.http, { stock: 3 });
    const buy = async (userId: number) => {
      await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId))
        .expect(202);
      return waitFor(
        async () => {
          const result = await t.http
            .get(`/api/v1/seckill/${goodsId}/result`)
            .set('Authorization', bearer(userId))
            .expect(200);
          return result.body.status === 'SUCCESS' ? (result.body.orderNo as string) : null;
        },
        { what: `the order of user ${userId}` },
      );
    };
    const paid = await buy(701);
    const cancelled = await buy(702);
    expect(await stores.redisStock(goodsId)).toBe(1);

    await t.http
      .post(`/api/v1/orders/${paid}/pay`)
      .set('Authorization', bearer(701))
      .expect(200, { orderNo: paid, status: 'PAID' });
    for (let i = 0; i < 2; i++) {
      await t.http
        .post(`/api/v1/orders/${cancelled}/cancel`)
        .set('Authorization', bearer(702))
        .expect(200, { orderNo: cancelled, status: 'CANCELLED' });
    }
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
    // The cancelled buyer may buy again.
    await buy(702);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 1,
      dbStock: 1,
    });
  });

  it('should dial each node at the address REDIS_CLUSTER_NAT_MAP gives for the one it announces, and at no other', async () => {
    const { cluster } = ctx;
    const { proxies, app } = await appBehindProxies(cluster);
    try {
      const goodsIds = await Promise.all(
        Array.from({ length: 6 }, () => createSale(app.http, { stock: 2 })),
      );
      const buy = (goodsId: number, userId: number) =>
        app.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
      for (const [i, goodsId] of goodsIds.entries()) await buy(goodsId, 780 + i).expect(202);
      // Sales on every master, each reached through its proxy.
      expect(proxies.map((proxy) => proxy.connections > 0)).toEqual([true, true, true]);

      // Nothing else leads to Redis: with the proxies cut, a purchase is refused, nothing taken.
      for (const proxy of proxies) proxy.down();
      const refused = await buy(goodsIds[0], 790);
      expect([refused.status, refused.body.code]).toEqual([503, 'UNAVAILABLE']);
      for (const proxy of proxies) proxy.up();
      await buyUntilReopened((userId) => buy(goodsIds[0], userId), 790);
    } finally {
      await app.close();
      for (const proxy of proxies) await proxy.close();
    }
  });

  it("should drop a master's connection that stops answering (half-open) and sell on a new one", async () => {
    const { cluster } = ctx;
    const { proxies, app } = await appBehindProxies(cluster);
    try {
      const goodsId = await createSale(app.http, { stock: 5 });
      const buy = (userId: number) =>
        app.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
      await buy(795).expect(202);
      const master = cluster.ports.indexOf(await cluster.masterOf(`seckill:{${goodsId}}:stock`));

      // The sale's master is alive, but what goes over the open connections to it is lost.
      proxies[master].silenceOpen();
      const silencedAt = Date.now();
      const requests = await newBuyersUntilAccepted(buy, 796);
      console.log(
        `half-open master connection: sold again after ${secondsSince(silencedAt)} s (${requests} requests)`,
      );
      // The purchase accepted before is still one buyer's: the sale was not sold twice.
      expect((await buy(795).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    } finally {
      await app.close();
      for (const proxy of proxies) await proxy.close();
    }
  });

  describe("the sold-out memo, announced on the cluster's pub/sub", () => {
    // A memo far longer than the test: only the stock-back announcement can reopen the sale.
    const apps: TestApp[] = [];

    beforeAll(async () => {
      for (let i = 0; i < 2; i++) {
        apps.push(
          await startApp({ REDIS_CLUSTER_NODES: ctx.cluster.seeds, SOLD_OUT_MEMO_MS: '60000' }),
        );
      }
    });

    afterAll(async () => {
      for (const app of apps) await app.close();
    });

    it('should reopen a sale remembered as sold out on another instance when a cancel returns stock', async () => {
      const [a, b] = apps;
      const goodsId = await createSale(a.http, { stock: 1 });
      const buy = (app: TestApp, userId: number) =>
        app.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
      await buy(a, 751).expect(202);
      expect((await buy(b, 752).expect(409)).body.code).toBe('SOLD_OUT');
      const orderNo = await waitFor(async () => (await ctx.stores.orders(goodsId))[0]?.order_no);

      await a.http
        .post(`/api/v1/orders/${orderNo}/cancel`)
        .set('Authorization', bearer(751))
        .expect(200);

      await waitFor(async () => (await buy(b, 752)).status === 202, {
        timeoutMs: 5_000,
        what: 'the other instance to sell the returned unit',
      });
    });
  });

  describe("a queue sale, whose waiting room shares the sale's slot", () => {
    let queued: TestApp;

    beforeAll(async () => {
      queued = await startApp({
        REDIS_CLUSTER_NODES: ctx.cluster.seeds,
        THROTTLE_ENABLED: 'false',
        SOLD_OUT_MEMO_MS: '0',
        QUEUE_TICK_MS: '50',
      });
    });

    afterAll(async () => {
      await queued?.close();
    });

    it('should shuffle, admit within the stock, sell only to the admitted, and stream SOLD_OUT to the rest', async () => {
      const { cluster, stores } = ctx;
      const stock = 3;
      const goodsId = await createSale(queued.http, {
        stock,
        startsInMs: 2_000,
        queue: { admitPerSecond: 1_000, admissionTtlSeconds: 60 },
      });
      const buyers = Array.from({ length: 8 }, (_, i) => 770 + i);
      for (const userId of buyers) {
        await queued.http
          .post(`/api/v1/seckill/${goodsId}/queue`)
          .set('Authorization', bearer(userId))
          .expect(200);
      }
      const streams = await Promise.all(
        buyers.map((userId) =>
          EventStreamClient.open(
            `${baseUrlOf(queued.app)}/api/v1/seckill/${goodsId}/queue/stream`,
            bearer(userId),
          ),
        ),
      );
      try {
        const standing = async (userId: number) =>
          (
            await queued.http
              .get(`/api/v1/seckill/${goodsId}/queue`)
              .set('Authorization', bearer(userId))
              .expect(200)
          ).body as { state: string; position: number | null };
        // QUEUE_ADMIT_STOCK_FACTOR 1: as many admitted as there are units, the rest placed.
        const settled = await waitFor(
          async () => {
            const all = await Promise.all(buyers.map(standing));
            return all.filter((s) => s.state === 'ADMITTED').length === stock &&
              all.every((s) => s.state === 'ADMITTED' || s.position !== null)
              ? all
              : null;
          },
          { what: `${stock} admitted, the rest placed` },
        );
        const admitted = buyers.filter((_, i) => settled[i].state === 'ADMITTED');
        const waiting = buyers.filter((_, i) => settled[i].state === 'WAITING');
        expect(waiting).toHaveLength(buyers.length - stock);

        // Every key of the waiting room sits on the stock's master (one slot: the scripts ran).
        const home = await cluster.masterOf(`seckill:{${goodsId}}:stock`);
        for (const key of Object.values(queueKeys(goodsId))) {
          expect(await cluster.masterOf(key)).toBe(home);
        }
        expect(await stores.redis.zcard(queueKeys(goodsId).admitted)).toBe(stock);

        const buy = (userId: number) =>
          queued.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
        expect((await buy(waiting[0]).expect(403)).body.code).toBe('NOT_ADMITTED');
        for (const userId of admitted) await buy(userId).expect(202);

        for (const [i, stream] of streams.entries()) {
          const state = admitted.includes(buyers[i]) ? 'PURCHASED' : 'SOLD_OUT';
          await stream.snapshot<{ state: string }>((s) => s.state === state, state, 10_000);
        }
        await waitForSettled(stores, goodsId);
        // Paid, no unit can come back: SOLD_OUT is final, and every stream ends.
        for (const order of await stores.orders(goodsId)) {
          await queued.http
            .post(`/api/v1/orders/${order.order_no}/pay`)
            .set('Authorization', bearer(order.user_id))
            .expect((response) => expect(response.status).toBeLessThan(300));
        }
        for (const stream of streams) {
          await stream.snapshot<{ final: boolean }>((s) => s.final, 'a final status', 10_000);
          await waitFor(() => stream.ended, { what: 'the stream to end' });
        }
        expect(new Set((await stores.orders(goodsId)).map((o) => o.user_id))).toEqual(
          new Set(admitted),
        );
        expect(await consistentReconcile(queued.http, goodsId)).toMatchObject({
          redisStock: 0,
          dbStock: 0,
        });
      } finally {
        for (const stream of streams) stream.close();
      }
    });
  });

  describe('rate limits, whose budgets live in different slots', () => {
    let limited: TestApp;

    beforeAll(async () => {
      limited = await startApp({
        REDIS_CLUSTER_NODES: ctx.cluster.seeds,
        TRUSTED_PROXIES: '127.0.0.1',
        THROTTLE_WINDOW_MS: '60000',
        THROTTLE_PURCHASE_USER_LIMIT: '5',
        THROTTLE_PURCHASE_IP_LIMIT: '10',
      });
    });

    afterAll(async () => {
      await limited?.close();
    });

    const purchase = (goodsId: number, userId: number, address: string) =>
      limited.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId))
        .set('X-Forwarded-For', address);

    it('should answer a user hammering the purchase route with 429, and sell them one item at most', async () => {
      const goodsId = await createSale(limited.http, { stock: 5 });

      const responses = await Promise.all(
        Array.from({ length: 40 }, () => purchase(goodsId, 731, '198.51.100.1')),
      );

      const throttled = responses.filter((response) => response.status === 429);
      expect(throttled).toHaveLength(35);
      for (const response of throttled) {
        expect(response.body.code).toBe('TOO_MANY_REQUESTS');
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      expect(responses.filter((response) => response.status === 202)).toHaveLength(1);
    });

    it('should still apply the per-IP budget to many users behind one address', async () => {
      const goodsId = await createSale(limited.http, { stock: 100 });

      const responses = await Promise.all(
        Array.from({ length: 30 }, (_, i) => purchase(goodsId, 740 + i, '198.51.100.2')),
      );

      expect(responses.filter((response) => response.status === 202)).toHaveLength(10);
      expect(responses.filter((response) => response.status === 429)).toHaveLength(20);
      expect(await ctx.stores.redisStock(goodsId)).toBe(90);
    });
  });
});

describe('faults: one master of a Redis Cluster restarts empty during a sale', () => {
  const ctx = onCluster({ REDIS_WATCH_INTERVAL_MS: '200' });
  const buy = (goodsId: number, userId: number) =>
    ctx.t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));

  it("should close only that master's sales, rebuild them from MySQL, and sell nothing twice", async () => {
    const { cluster, stores, t } = ctx;
    const goodsId = await createSale(t.http, { stock: 20 });
    const master = await cluster.masterOf(`seckill:{${goodsId}}:stock`);
    // A sale held by another master, which goes on selling meanwhile.
    let elsewhere = 0;
    while (elsewhere === 0) {
      const id = await createSale(t.http, { stock: 20 });
      if ((await cluster.masterOf(`seckill:{${id}}:stock`)) !== master) elsewhere = id;
    }
    for (const userId of [801, 802, 803, 804, 805]) await buy(goodsId, userId).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 5, { what: 'five orders' });

    await cluster.kill(master);
    // At once, as with a single Redis down: no retries against a master known to be gone.
    const downAt = Date.now();
    expect((await buy(goodsId, 806).expect(503)).body.code).toBe('UNAVAILABLE');
    expect(Date.now() - downAt).toBeLessThan(1_000);
    await buy(elsewhere, 807).expect(202);

    await cluster.up(master); // empty: the sale, its buyers and its outbox are gone
    const healedAt = Date.now();
    const reopenRequests = await buyUntilReopened((userId) => buy(goodsId, userId), 806);
    const recoveredSeconds = secondsSince(healedAt);
    // Generous: the reopen waits for the orders the lost master accepted, then one retry.
    expect(recoveredSeconds).toBeLessThan(20);

    // Its buyers came back from MySQL: nobody buys twice.
    expect((await buy(goodsId, 801).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    const orders = await waitFor(async () => {
      const rows = await stores.orders(goodsId);
      return rows.length === 6 ? rows : null;
    });
    expect(new Set(orders.map((order) => Number(order.user_id))).size).toBe(6);
    await waitForSettled(stores, goodsId);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 14,
      dbStock: 14,
      buyers: 6,
      inFlight: 0,
    });
    await recordChaos(stores, {
      scenario: 'Redis Cluster master restarted empty',
      fault: 'one of three masters SIGKILLed mid-sale, restarted with no data',
      goodsId,
      requests: 5 + 1 + reopenRequests + 1,
      accepted: 6,
      recoveredSeconds,
    });
    // The other master's sale was never touched.
    expect(await stores.redisStock(elsewhere)).toBe(19);
  });
});

describe('faults: a master of a Redis Cluster with a replica each dies during a sale', () => {
  // A replica takes over 1 s after its master stops answering (cluster-node-timeout).
  const ctx = onCluster(
    { REDIS_WATCH_INTERVAL_MS: '200', TRUSTED_PROXIES: '127.0.0.1', QUEUE_TICK_MS: '50' },
    { replicas: 1, nodeTimeoutMs: 1_000 },
  );

  const standing = (goodsId: number, userId: number) =>
    ctx.t.http.get(`/api/v1/seckill/${goodsId}/queue`).set('Authorization', bearer(userId));

  /** Until the standing answers 200 (503 UNAVAILABLE with Retry-After meanwhile). */
  const standingOnceAnswered = (goodsId: number, userId: number) =>
    waitFor(
      async () => {
        const response = await standing(goodsId, userId);
        if (response.status === 200) return response.body as { state: string; position: number };
        expect(response.status).toBe(503);
        expect(response.headers['retry-after']).toBeDefined();
        return null;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: `the standing of ${userId}` },
    );

  /**
   * A queue sale of one unit whose keys are on `master`, started, with eight buyers joined: one
   * admitted, seven waiting in their places. Returns their standings then.
   */
  async function queueSaleOn(master: number) {
    const { cluster, t } = ctx;
    let goodsId = 0;
    while (goodsId === 0) {
      const id = await createSale(t.http, {
        stock: 1,
        startsInMs: 1_500,
        queue: { admitPerSecond: 100, admissionTtlSeconds: 300 },
      });
      if ((await cluster.masterOf(`seckill:{${id}}:stock`)) === master) goodsId = id;
    }
    const buyers = Array.from({ length: 8 }, (_, i) => 71_000 + goodsId * 10 + i);
    for (const userId of buyers) {
      await t.http
        .post(`/api/v1/seckill/${goodsId}/queue`)
        .set('Authorization', bearer(userId))
        .set('X-Forwarded-For', `10.4.${(userId >> 8) & 255}.${userId & 255}`)
        .expect(200);
    }
    const before = await waitFor(
      async () => {
        const now = await Promise.all(
          buyers.map(
            async (userId) =>
              (await standing(goodsId, userId).expect(200)).body as {
                state: string;
                position: number;
              },
          ),
        );
        return now.filter((s) => s.state === 'ADMITTED').length === 1 &&
          now.every((s) => s.state === 'ADMITTED' || s.position !== null)
          ? now
          : null;
      },
      { what: 'one admitted, the rest placed' },
    );
    return { goodsId, buyers, before };
  }

  it("should take its replica's promotion as a restart: close that master's sales, rebuild them from MySQL and reopen, selling nothing twice, losing no 202 and keeping the waiting room", async () => {
    const { cluster, stores, t } = ctx;
    // More stock than buyers: any answer but 202 after the failover is the failover's.
    const stock = 1_000;
    const goodsId = await createSale(t.http, { stock });
    const key = `seckill:{${goodsId}}:stock`;
    // Each node learns its peers' replicas by gossip, a moment after they synced.
    const { master, replicas } = await waitFor(
      async () => {
        const servers = await cluster.servers(key);
        return servers.replicas.length === 1 ? servers : null;
      },
      { what: "the sale's master to have its replica" },
    );
    // A queue sale on the same master: its room must come back as it was (restored from MySQL).
    const room = await queueSaleOn(master);
    // The promoted replica is a new server for those slots (its run_id): a restart to the app,
    // since it may lag behind the master it replaces.
    const restarts: RedisRestart[] = [];
    t.app.get(RedisWatchdogService).onRestart((restart) => restarts.push(restart));
    const startedAt = Date.now();
    const answers: { userId: number; status: number; code?: string; atMs: number }[] = [];
    const buy = async (userId: number) => {
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId))
        .set('X-Forwarded-For', `10.3.${(userId >> 8) & 255}.${userId & 255}`);
      answers.push({
        userId,
        status: response.status,
        code: response.body.code as string | undefined,
        atMs: Date.now() - startedAt,
      });
      return response;
    };
    // 600 buyers over 12 s; the sale's master dies 3 s in.
    const crowd = Promise.all(
      Array.from({ length: 600 }, async (_, i) => {
        await sleep(i * 20);
        await buy(70_000 + i);
      }),
    );
    await sleep(3_000);
    await cluster.kill(master);
    const killedMs = Date.now() - startedAt;
    await waitFor(async () => (await cluster.servers(key)).master === replicas[0], {
      timeoutMs: 20_000,
      intervalMs: 100,
      what: 'the replica promoted',
    });
    const promotedMs = Date.now() - startedAt;
    await crowd;
    // Reopened by now, or answering 503 until it is.
    await buyUntilReopened(buy, 70_600);

    // Every joiner of the queue sale reads the standing it had (a 503 with Retry-After while
    // the room is restored): the admitted one still admitted, the others in their places.
    const after = await Promise.all(
      room.buyers.map((userId) => standingOnceAnswered(room.goodsId, userId)),
    );
    expect(after.map(({ state, position }) => ({ state, position }))).toEqual(
      room.before.map(({ state, position }) => ({ state, position })),
    );
    expect(restarts).toHaveLength(1);
    expect(restarts[0].slots).not.toBe('all');
    for (const answer of answers) expect([202, 409, 503]).toContain(answer.status);
    const accepted = answers.filter((answer) => answer.status === 202);
    const reopenedMs = accepted.find((answer) => answer.atMs > promotedMs)?.atMs;
    expect(reopenedMs).toBeDefined();
    // Every 202 is one order, one per buyer, never more than the stock; both stores agree.
    const orders = await ordersOnceSettled(stores, goodsId, accepted.length);
    const buyers = new Set(orders.map((order) => Number(order.user_id)));
    for (const answer of accepted) expect(buyers.has(answer.userId)).toBe(true);
    expect(buyers.size).toBe(orders.length);
    expect(orders.length).toBeLessThanOrEqual(stock);
    await waitForSettled(stores, goodsId);
    const report = await consistentReconcile(t.http, goodsId);
    expect(report).toMatchObject({ inFlight: 0, buyers: orders.length });
    console.log(
      `redis cluster failover: master killed at ${killedMs} ms, replica promoted at ${promotedMs} ms, the sale's first 202 after it at ${reopenedMs} ms (${reopenedMs! - killedMs} ms after the kill); ${accepted.length} accepted, ${answers.filter((a) => a.status === 503).length} answered 503`,
    );
    await recordChaos(stores, {
      scenario: 'Redis Cluster master failover',
      fault: 'one of three masters SIGKILLed mid-sale, its replica promoted',
      goodsId,
      requests: answers.length,
      accepted: accepted.length,
      recoveredSeconds: (reopenedMs! - killedMs) / 1_000,
    });
  });
});
