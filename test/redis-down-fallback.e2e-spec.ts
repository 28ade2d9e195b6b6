import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsService } from '../src/modules/metrics/metrics.service.js';
import {
  adminAuth,
  bearer,
  createSale,
  doubleClickCrowd,
  startApp,
  Stores,
  waitFor,
  type CrowdAnswer,
  type TestApp,
} from './support/harness.js';
import { recordChaos, secondsSince } from './support/chaos-report.js';
import { PrivateRedis } from './support/private-redis.js';
import { proxyInFront, type TcpProxy } from './support/tcp-proxy.js';

type TestAgent = TestApp['http'];

/** Answers that settle a buyer: accepted, or refused for good. */
const FINAL = new Set(['202', '409 SOLD_OUT', '409 ALREADY_PURCHASED']);
const answerOf = (a: CrowdAnswer) => (a.status === 202 ? '202' : `${a.status} ${a.code ?? ''}`);

/** doubleClickCrowd's clicks, each answer with the time it came (for the figures). */
function timedCrowd(http: TestAgent, goodsId: number, buyers: number[]) {
  return Promise.all(
    buyers.flatMap((userId) =>
      [0, 1].map(async () => {
        const response = await http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(userId))
          .set('X-Forwarded-For', `10.1.${(userId >> 8) & 255}.${userId & 255}`);
        const code = response.body.code as string | undefined;
        return { userId, status: response.status, code, at: Date.now() };
      }),
    ),
  );
}

/**
 * Every buyer double-clicks, round after round, until each has a final answer: 202, SOLD_OUT or
 * ALREADY_PURCHASED. A 503 (nothing taken), a concurrent click's DUPLICATE_REQUEST or a 429 (a
 * buyer retrying faster than its budget, counted in memory while Redis is down) is tried again
 * next round. Returns every answer, and who was accepted.
 */
async function buyUntilSettled(http: TestAgent, goodsId: number, users: number[]) {
  const answers: (CrowdAnswer & { at: number })[] = [];
  let pending = users;
  await waitFor(
    async () => {
      const round = await timedCrowd(http, goodsId, pending);
      answers.push(...round);
      const settled = new Set(
        round.filter((a) => FINAL.has(answerOf(a))).map((answer) => answer.userId),
      );
      pending = pending.filter((userId) => !settled.has(userId));
      return pending.length === 0;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'every buyer to get a final answer' },
  );
  for (const answer of answers) {
    expect([
      ...FINAL,
      '503 UNAVAILABLE',
      '409 DUPLICATE_REQUEST',
      '429 TOO_MANY_REQUESTS',
    ]).toContain(answerOf(answer));
  }
  const acceptedAt = answers.filter((a) => a.status === 202).map((a) => a.at);
  const firstAcceptedAt = acceptedAt.length > 0 ? Math.min(...acceptedAt) : null;
  return {
    answers,
    accepted: answers.filter((a) => a.status === 202).map((a) => a.userId),
    firstAcceptedAt,
  };
}

/** seckill_purchases_total for this outcome and mode, from the app's registry. */
async function purchases(app: NestFastifyApplication, outcome: string, mode: string) {
  const metric = await app.get(MetricsService).purchases.get();
  return (
    metric.values.find((v) => v.labels.outcome === outcome && v.labels.mode === mode)?.value ?? 0
  );
}

async function fallbackRefusals(app: NestFastifyApplication, reason: string) {
  const metric = await app.get(MetricsService).fallbackRefusals.get();
  return metric.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

/** Exactly `stock` sold, one order per accepted buyer, each accepted buyer once, MySQL agreeing. */
async function expectSoldExactly(
  stores: Stores,
  goodsId: number,
  stock: number,
  accepted: number[],
) {
  expect(accepted).toHaveLength(stock);
  expect(new Set(accepted).size).toBe(stock);
  const orders = await waitFor(
    async () => {
      const rows = await stores.orders(goodsId);
      return rows.length >= stock ? rows : null;
    },
    { timeoutMs: 30_000, what: `${stock} orders` },
  );
  expect(orders).toHaveLength(stock);
  expect(new Set(orders.map((order) => Number(order.user_id)))).toEqual(new Set(accepted));
  expect(await stores.mysqlStock(goodsId)).toBe(0);
}

/** Once Redis is back and the sale rebuilt: the reconcile answers, consistent, nothing in flight. */
async function reconciledOnRedis(http: TestAgent, goodsId: number) {
  return waitFor(
    async () => {
      const response = await http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth());
      const body = response.body as { consistent?: boolean; inFlight?: number };
      return response.status === 200 && body.consistent && body.inFlight === 0
        ? (response.body as Record<string, unknown>)
        : null;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'a consistent reconcile on Redis' },
  );
}

/**
 * An app on a private Redis that the tests kill and restart, or (unless `direct`) cut off through
 * a proxy (a network outage that leaves its data in place), started before the block's tests.
 */
function useAppOnPrivateRedis(env: Record<string, string> = {}, { direct = false } = {}) {
  const app = {} as { redis: PrivateRedis; proxy: TcpProxy; t: TestApp; stores: Stores };
  app.stores = new Stores();
  beforeAll(async () => {
    app.redis = await PrivateRedis.start();
    const through = await proxyInFront(app.redis.url, 6379);
    app.proxy = through.proxy;
    app.t = await startApp({
      // Direct: a killed server's connections end at once, as they would in production.
      REDIS_URL: direct ? app.redis.url : through.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
      TRUSTED_PROXIES: '127.0.0.1',
      ...env,
    });
  });
  afterAll(async () => {
    app.proxy.up();
    await app.t.close();
    await app.proxy.close();
    await app.redis.kill();
    await app.stores.close();
  });
  return app;
}

type AppOnPrivateRedis = ReturnType<typeof useAppOnPrivateRedis>;

/** Two ways to lose Redis and get it back: a crash (back empty), a network outage (data kept). */
const OUTAGES = [
  {
    back: 'restarted empty',
    scenario: 'Redis down, sale goes on through MySQL',
    fault: 'redis-server SIGKILLed mid-crowd, restarted empty',
    direct: true,
    lose: (app: AppOnPrivateRedis) => app.redis.kill(),
    restore: (app: AppOnPrivateRedis) => app.redis.up(),
  },
  {
    back: 'back with its data',
    scenario: 'Redis unreachable, sale goes on through MySQL',
    fault: 'Redis cut off mid-crowd (connections dropped and refused), back with its data',
    direct: false,
    lose: async (app: AppOnPrivateRedis) => app.proxy.down(),
    restore: async (app: AppOnPrivateRedis) => app.proxy.up(),
  },
];

const users = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe.each(OUTAGES)('Redis lost mid-crowd, then $back (REDIS_DOWN_MODE=database)', (outage) => {
  const app = useAppOnPrivateRedis({}, { direct: outage.direct });

  it('should sell exactly the stock through MySQL meanwhile, one per user, and go on through Redis after', async () => {
    const goodsId = await createSale(app.t.http, { stock: 200 });
    // The first crowd buys through Redis; Redis dies while it is at it.
    const before = doubleClickCrowd([app.t.http], goodsId, users(10_001, 150));
    await waitFor(async () => (await app.stores.orders(goodsId)).length >= 20, {
      what: 'the first orders',
    });
    const lostAt = Date.now();
    await outage.lose(app);
    const early = await before;
    const pendingEarly = early.filter((a) => a.status !== 202).map((a) => a.userId);
    const acceptedEarly = early.filter((a) => a.status === 202).map((a) => a.userId);

    // Everyone else, and those the outage turned away, until the sale is sold out.
    const during = await buyUntilSettled(app.t.http, goodsId, [
      ...new Set([...pendingEarly, ...users(10_151, 450)]),
    ]);
    expect(await purchases(app.t.app, 'ACCEPTED', 'database')).toBeGreaterThan(0);
    const accepted = [...acceptedEarly, ...during.accepted];
    await expectSoldExactly(app.stores, goodsId, 200, accepted);

    await outage.restore(app);
    const backAt = Date.now();
    const report = await reconciledOnRedis(app.t.http, goodsId);
    expect(report).toMatchObject({ redisStock: 0, dbStock: 0, buyers: 200, inFlight: 0 });
    // Back on Redis: a later buyer is refused by Redis, not by MySQL.
    const redisSoldOut = await purchases(app.t.app, 'SOLD_OUT', 'redis');
    await waitFor(
      async () => {
        const answer = await app.t.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(10_601));
        return (
          answer.status === 409 && (await purchases(app.t.app, 'SOLD_OUT', 'redis')) > redisSoldOut
        );
      },
      // A Redis restarted empty is rebuilt once the orders queue drains: on a loaded machine that
      // has taken past 15 s.
      { intervalMs: 300, timeoutMs: 30_000, what: 'a SOLD_OUT from Redis' },
    );
    expect(await app.stores.orders(goodsId)).toHaveLength(200);
    const firstSale = secondsSince(lostAt) - secondsSince(during.firstAcceptedAt!);
    await recordChaos(app.stores, {
      scenario: outage.scenario,
      fault: `${outage.fault} (600 buyers, stock 200, double clicks): ${acceptedEarly.length} sold through Redis, ${during.accepted.length} through MySQL; first MySQL sale ${firstSale.toFixed(1)} s after the loss; "recovered in" = Redis back to the first answer from Redis again`,
      goodsId,
      requests: early.length + during.answers.length + 1,
      accepted: 200,
      recoveredSeconds: secondsSince(backAt),
    });
  });
});

describe('Redis unreachable, then back with its data intact (a network outage)', () => {
  const app = useAppOnPrivateRedis();

  it('should not sell from the stale Redis copy once it is reachable again, but rebuild it from MySQL first', async () => {
    const goodsId = await createSale(app.t.http, { stock: 50 });
    const viaRedis = await buyUntilSettled(app.t.http, goodsId, users(20_001, 10));
    await waitFor(async () => (await app.stores.orders(goodsId)).length === 10, {
      what: '10 orders',
    });

    app.proxy.down();
    const viaMysql = await buyUntilSettled(app.t.http, goodsId, users(20_011, 20));
    expect(viaMysql.accepted).toHaveLength(20);
    // Redis still says 40 left; the truth is 20.
    const direct = new Redis(app.redis.url);
    expect(await direct.get(`seckill:{${goodsId}}:stock`)).toBe('40');
    direct.disconnect();

    app.proxy.up();
    const after = await buyUntilSettled(app.t.http, goodsId, users(20_031, 40));
    await expectSoldExactly(app.stores, goodsId, 50, [
      ...viaRedis.accepted,
      ...viaMysql.accepted,
      ...after.accepted,
    ]);
    const report = await reconciledOnRedis(app.t.http, goodsId);
    expect(report).toMatchObject({ redisStock: 0, dbStock: 0, buyers: 50 });
    // The buyers MySQL sold to are known to the rebuilt Redis (503 until this instance has seen
    // the sale loaded, a refresh of the marks later). Each poll is a purchase by the same user, so
    // it polls slower than the per-user limit (5 a second) lets through.
    const again = await waitFor(
      async () => {
        const answer = await app.t.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(20_011));
        return answer.status === 503 ? null : answer;
      },
      { intervalMs: 300, what: 'an answer from the rebuilt Redis' },
    );
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
    expect(await app.stores.orders(goodsId)).toHaveLength(50);
  });
});

describe('Redis down: the goods row as the hot spot', () => {
  const app = useAppOnPrivateRedis({
    PUBLISH_CONFIRM_TIMEOUT_MS: '500',
    FALLBACK_MAX_INFLIGHT: '500',
  });

  /** Sells one unit through MySQL (the fallback is open for this sale from then on). */
  async function openFallback(goodsId: number, userId: number) {
    await app.redis.kill();
    await buyUntilSettled(app.t.http, goodsId, [userId]);
  }

  it('should sell exactly the stock to 500 concurrent buyers deciding on one goods row, none twice', async () => {
    const goodsId = await createSale(app.t.http, { stock: 101 });
    await openFallback(goodsId, 30_000);

    const startedAt = Date.now();
    const answers = await Promise.all(
      users(30_001, 500).map(async (userId) => {
        const answer = await app.t.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(userId))
          .set('X-Forwarded-For', `10.3.${userId >> 8}.${userId & 255}`);
        return Object.assign(answer, { at: Date.now() });
      }),
    );
    const lastSaleAt = Math.max(...answers.filter((a) => a.status === 202).map((a) => a.at));
    const codes = answers.map((a) => (a.status === 202 ? '202' : `${a.status} ${a.body.code}`));
    const accepted = answers.filter((a) => a.status === 202).length;
    const soldOut = codes.filter((c) => c === '409 SOLD_OUT').length;
    const unavailable = codes.filter((c) => c === '503 UNAVAILABLE').length;
    expect(accepted + soldOut + unavailable).toBe(500);
    expect(accepted).toBe(100);
    const orders = await app.stores.orders(goodsId);
    expect(orders).toHaveLength(101);
    expect(new Set(orders.map((o) => Number(o.user_id))).size).toBe(101);
    expect(await app.stores.mysqlStock(goodsId)).toBe(0);
    const seconds = secondsSince(startedAt);
    const sellingSeconds = (lastSaleAt - startedAt) / 1000;
    await app.redis.up();
    await reconciledOnRedis(app.t.http, goodsId);
    await recordChaos(app.stores, {
      scenario: '500 buyers at once on one row, Redis down',
      fault: `500 concurrent purchases decided by MySQL alone on one goods row (stock 100 left after the one sale that opened the fallback, FALLBACK_MAX_INFLIGHT=500): ${accepted} sold, ${soldOut} SOLD_OUT, ${unavailable} 503, the last sale ${sellingSeconds.toFixed(2)} s after the first request (${Math.round(accepted / Math.max(sellingSeconds, 0.01))} sales/s), all answered in ${seconds} s`,
      goodsId,
      // The one purchase that opened the fallback counts too: its order is among the goods'.
      requests: 500 + 1,
      accepted: accepted + 1,
      recoveredSeconds: null,
    });
  });
});

describe('Redis down: the contract answers from the goods row', () => {
  const app = useAppOnPrivateRedis({
    PUBLISH_CONFIRM_TIMEOUT_MS: '500',
    FALLBACK_MAX_INFLIGHT: '4',
    ORDER_PAYMENT_TIMEOUT_MS: '3000',
    // The first buyer of each sale asks every 200 ms until the fallback opens it.
    THROTTLE_PURCHASE_USER_LIMIT: '0',
  });
  const sales = { held: 0, busy: 0, expiring: 0, upcoming: 0, ending: 0, queued: 0 };
  const buy = (goodsId: number, userId: number) =>
    app.t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .set('X-Forwarded-For', `10.4.${userId >> 8}.${userId & 255}`);

  beforeAll(async () => {
    sales.held = await createSale(app.t.http, { stock: 5 });
    sales.busy = await createSale(app.t.http, { stock: 100 });
    sales.expiring = await createSale(app.t.http, { stock: 1 });
    sales.upcoming = await createSale(app.t.http, { stock: 5, startsInMs: 600_000 });
    sales.ending = await createSale(app.t.http, { stock: 5, startsInMs: -1_000, lastsMs: 4_000 });
    sales.queued = await createSale(app.t.http, {
      stock: 5,
      queue: { admitPerSecond: 100, admissionTtlSeconds: 60 },
    });
    await app.redis.kill();
    // The fallback opens each goods once it has been held from the Redis path for a while and
    // a barrier has passed after that.
    // The held sale's last: its order must not reach its payment timeout before the test.
    await buyUntilSettled(app.t.http, sales.busy, [40_010]);
    // Its unit back at once, not at its payment timeout in the middle of a test.
    const [opener] = await app.stores.orders(sales.busy);
    await app.t.http
      .post(`/api/v1/orders/${opener.order_no}/cancel`)
      .set('Authorization', bearer(40_010))
      .expect(200);
    await buyUntilSettled(app.t.http, sales.held, [40_001]);
  });

  it('should refuse a second purchase by the same buyer with ALREADY_PURCHASED, and find the first order', async () => {
    const again = await buy(sales.held, 40_001);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
    const result = await app.t.http
      .get(`/api/v1/seckill/${sales.held}/result`)
      .set('Authorization', bearer(40_001))
      .expect(200);
    expect(result.body).toMatchObject({ status: 'SUCCESS', orderNo: expect.any(String) });
    const order = await app.t.http
      .get(`/api/v1/orders/${result.body.orderNo}`)
      .set('Authorization', bearer(40_001))
      .expect(200);
    expect(order.body).toMatchObject({ userId: 40_001, status: 'PENDING_PAYMENT', quantity: 1 });
    expect(await app.stores.orders(sales.held)).toHaveLength(1);
  });

  it('should not sell a queue sale through MySQL, whose admissions are in Redis: 503, nothing taken', async () => {
    const refused = await buy(sales.queued, 40_020);

    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ code: 'UNAVAILABLE', message: /waiting room/ });
    expect(await app.stores.orders(sales.queued)).toHaveLength(0);
    expect(await app.stores.mysqlStock(sales.queued)).toBe(5);
  });

  it('should enforce the sale window from the goods row', async () => {
    expect((await buy(sales.upcoming, 40_002)).body.code).toBe('SALE_NOT_STARTED');
    const ended = await waitFor(
      async () => {
        const answer = await buy(sales.ending, 40_003);
        return answer.body.code === 'SALE_ENDED' ? answer : null;
      },
      { intervalMs: 300, what: 'the sale to end' },
    );
    expect(ended.status).toBe(409);
    expect(await app.stores.orders(sales.upcoming)).toHaveLength(0);
  });

  it('should refuse purchases over FALLBACK_MAX_INFLIGHT with 503 at once, taking nothing', async () => {
    const busyBefore = await fallbackRefusals(app.t.app, 'busy');
    const answers = await Promise.all(users(41_001, 60).map((userId) => buy(sales.busy, userId)));
    const accepted = answers.filter((a) => a.status === 202).length;
    const refused = answers.filter((a) => a.status === 503);
    for (const answer of answers) {
      expect(['202', '503 UNAVAILABLE']).toContain(
        answer.status === 202 ? '202' : `${answer.status} ${answer.body.code}`,
      );
    }
    expect(refused.length).toBeGreaterThan(0);
    expect(await fallbackRefusals(app.t.app, 'busy')).toBe(busyBefore + refused.length);
    // Besides the one bought to open it, cancelled.
    expect(await app.stores.orders(sales.busy)).toHaveLength(accepted + 1);
    expect(await app.stores.mysqlStock(sales.busy)).toBe(100 - accepted);
  });

  it('should cancel an unpaid fallback order at its payment timeout and sell its unit again', async () => {
    const [first] = (await buyUntilSettled(app.t.http, sales.expiring, [42_001])).accepted;
    expect(first).toBe(42_001);
    expect((await buy(sales.expiring, 42_002)).body.code).toBe('SOLD_OUT');
    await waitFor(
      async () => (await app.stores.orders(sales.expiring))[0]?.status === 'CANCELLED',
      {
        timeoutMs: 30_000,
        what: 'the payment timeout to cancel the order',
      },
    );
    expect(await app.stores.mysqlStock(sales.expiring)).toBe(1);
    await waitFor(async () => (await buy(sales.expiring, 42_002)).status === 202, {
      intervalMs: 300,
      what: 'the unit to sell again',
    });
    const orders = await app.stores.orders(sales.expiring);
    expect(orders.map((o) => [Number(o.user_id), o.status])).toEqual([
      [42_001, 'CANCELLED'],
      [42_002, 'PENDING_PAYMENT'],
    ]);
  });
});

describe('Redis down with an accepted order still in RabbitMQ', () => {
  let redis: PrivateRedis;
  let broker: TcpProxy;
  let api: TestApp;
  let worker: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const env = {
      REDIS_URL: redis.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      PUBLISH_CONFIRM_TIMEOUT_MS: '500',
    };
    api = await startApp({ ...env, APP_ROLE: 'api' });
    // The only consumer reaches the broker through a proxy the test stalls.
    const through = await proxyInFront(process.env.RABBITMQ_URL!, 5672);
    broker = through.proxy;
    worker = await startApp({ ...env, APP_ROLE: 'worker', RABBITMQ_URL: through.url });
  });

  afterAll(async () => {
    broker.resume();
    await api.close();
    await worker.close();
    await broker.close();
    await redis.kill();
    await stores.close();
  });

  it('should write it before MySQL sells, so the fallback does not sell its unit again', async () => {
    const goodsId = await createSale(api.http, { stock: 1 });
    const buy = (userId: number) =>
      api.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    broker.stall();
    expect((await buy(50_001)).status).toBe(202);
    await redis.kill();

    // Its order is not written: the fallback's barrier cannot pass, and nothing is sold.
    const held: string[] = [];
    await waitFor(
      async () => {
        const answer = await buy(50_002);
        held.push(`${answer.status} ${answer.body.code}`);
        return held.length >= 10;
      },
      { intervalMs: 300, what: 'purchases while the order is in the queue' },
    );
    expect(new Set(held)).toEqual(new Set(['503 UNAVAILABLE']));
    expect(await stores.orders(goodsId)).toHaveLength(0);

    broker.resume();
    const after = await buyUntilSettled(api.http, goodsId, [50_002]);
    expect(after.accepted).toEqual([]);
    // The round that settles the buyer holds both clicks; the other may be a 429 or a 503.
    const final = after.answers.filter((answer) => FINAL.has(answerOf(answer)));
    expect(new Set(final.map(answerOf))).toEqual(new Set(['409 SOLD_OUT']));
    const orders = await stores.orders(goodsId);
    expect(orders.map((order) => Number(order.user_id))).toEqual([50_001]);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
  });
});

describe('An instance whose first read of the fallback marks failed', () => {
  let mysql: TcpProxy;
  let api: TestApp;

  beforeAll(async () => {
    const through = await proxyInFront(process.env.DATABASE_URL!, 3306);
    mysql = through.proxy;
    // MySQL goes down as the gate sends its first read of the marks (at start: with APP_ROLE=api
    // no worker sends the same query), and is back once that read has failed.
    let cut = false;
    mysql.tapClient((chunk) => {
      if (cut || !chunk.includes('FROM seckill_goods WHERE redis_stale = 1')) return;
      cut = true;
      mysql.down();
    });
    const starting = startApp({ APP_ROLE: 'api', DATABASE_URL: through.url });
    await waitFor(async () => cut, { what: 'the first read of the marks' });
    mysql.up();
    api = await starting;
  });

  afterAll(async () => {
    mysql.up();
    await api.close();
    await mysql.close();
  });

  it('should sell through Redis again once MySQL is back, not 503 every purchase until restarted', async () => {
    const goodsId = await createSale(api.http, { stock: 5 });
    const answer = await waitFor(
      async () => {
        const response = await api.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(60_001));
        return response.status === 503 ? null : response;
      },
      { timeoutMs: 10_000, intervalMs: 200, what: 'an answer other than 503' },
    );
    expect(answer.status).toBe(202);
  });
});

describe('Redis lost between a purchase the broker did not confirm and its void', () => {
  let redis: PrivateRedis;
  let broker: TcpProxy;
  let api: TestApp;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const through = await proxyInFront(process.env.RABBITMQ_URL!, 5672);
    broker = through.proxy;
    api = await startApp({
      REDIS_URL: redis.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      // Long enough to kill Redis between the deduct and the void.
      PUBLISH_CONFIRM_TIMEOUT_MS: '2000',
      RABBITMQ_URL: through.url,
    });
  });

  afterAll(async () => {
    broker.resume();
    await api.close();
    await broker.close();
    await redis.kill();
  });

  it('should answer 503, not a 202 whose message only the lost outbox holds', async () => {
    const goodsId = await createSale(api.http, { stock: 5 });
    broker.stall();
    const answer = api.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(70_001))
      .then((response) => response);
    // Redis took the unit; the publish now waits for a confirm that will not come.
    const direct = new Redis(redis.url);
    await waitFor(async () => (await direct.get(`seckill:{${goodsId}}:stock`)) === '4', {
      intervalMs: 20,
      what: 'the deduct in Redis',
    });
    direct.disconnect();
    await redis.kill();

    const response = await answer;
    expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
  });
});

describe('one instance cut off from Redis while another still reaches it (REDIS_DOWN_MODE=database)', () => {
  const apps = {} as { redis: PrivateRedis; proxy: TcpProxy; cut: TestApp; near: TestApp };
  const stores = new Stores();
  beforeAll(async () => {
    apps.redis = await PrivateRedis.start();
    const through = await proxyInFront(apps.redis.url, 6379);
    apps.proxy = through.proxy;
    const env = {
      REDIS_DOWN_MODE: 'database',
      REDIS_WATCH_INTERVAL_MS: '200',
      PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
      THROTTLE_ENABLED: 'false',
    };
    apps.cut = await startApp({ ...env, REDIS_URL: through.url });
    apps.near = await startApp({ ...env, REDIS_URL: apps.redis.url });
  });
  afterAll(async () => {
    apps.proxy.up();
    await apps.cut.close();
    await apps.near.close();
    await apps.proxy.close();
    await apps.redis.kill();
    await stores.close();
  });

  it('should not accept a purchase through Redis on one instance once the other sells the goods through MySQL: no buyer clicking on both gets two 202s', async () => {
    const goodsId = await createSale(apps.near.http, { stock: 500 });
    apps.proxy.down();
    const buy = (t: TestApp, userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    const twice: number[] = [];
    let accepted = 0;
    let soldThroughMysql = 0;
    let next = 20_001;
    // Each buyer clicks on the cut-off instance, then at once on the other, until the cut-off
    // one has sold through MySQL for a while: the first of its sales come moments after it
    // opened the goods to MySQL.
    await waitFor(
      async () => {
        const userId = next++;
        const cut = await buy(apps.cut, userId);
        if (cut.status !== 202) return false;
        soldThroughMysql++;
        const near = await buy(apps.near, userId);
        accepted += near.status === 202 ? 2 : 1;
        if (near.status === 202) twice.push(userId);
        return soldThroughMysql >= 30;
      },
      { timeoutMs: 60_000, intervalMs: 10, what: '30 sales through MySQL on the cut-off instance' },
    );

    expect(twice).toEqual([]);
    // Every 202 is an order, none refused by MySQL afterwards.
    await waitFor(async () => (await stores.orders(goodsId)).length === accepted, {
      timeoutMs: 30_000,
      what: `${accepted} orders`,
    });
    expect(new Set((await stores.orders(goodsId)).map((order) => order.user_id)).size).toBe(
      accepted,
    );
  });
});
