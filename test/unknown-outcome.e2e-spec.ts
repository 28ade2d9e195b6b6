import { Redis } from 'ioredis';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminAuth,
  bearer,
  createSale,
  startApp,
  Stores,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { PrivateRedis } from './support/private-redis.js';
import { proxyInFront, type TcpProxy } from './support/tcp-proxy.js';

/**
 * A 503 means nothing was taken, unless its body carries the purchase's requestId: then the
 * service could not know (a reply lost on its way from Redis or MySQL), and the result route
 * tells the outcome once it is known (the contract's Invariants).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Agent = TestApp['http'];

const buy = (http: Agent, goodsId: number, userId: number) =>
  http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));

const resultOf = (http: Agent, goodsId: number, userId: number) =>
  http.get(`/api/v1/seckill/${goodsId}/result`).set('Authorization', bearer(userId));

async function ordersFor(stores: Stores, goodsId: number, requestId: string) {
  return (await stores.orders(goodsId)).filter((order) => order.request_id === requestId);
}

/** The final result of the buyer's purchase once it is known (not 503), and the stores agree. */
async function knownResult(http: Agent, goodsId: number, userId: number) {
  return waitFor(
    async () => {
      const response = await resultOf(http, goodsId, userId);
      if (response.status !== 200 || response.body.status === 'QUEUED') return null;
      const reconcile = await http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth());
      return reconcile.body.consistent && reconcile.body.inFlight === 0
        ? (response.body as { status: string; requestId?: string; orderNo?: string })
        : null;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'the outcome to be known, the stores agreeing' },
  );
}

describe.each(['closed', 'database'])(
  'REDIS_DOWN_MODE=%s: a purchase the broker did not confirm, Redis lost before its void',
  (mode) => {
    let redis: PrivateRedis;
    let broker: TcpProxy;
    let api: TestApp;
    const stores = new Stores();

    beforeAll(async () => {
      redis = await PrivateRedis.start();
      const through = await proxyInFront(process.env.RABBITMQ_URL!, 5672);
      broker = through.proxy;
      api = await startApp({
        REDIS_URL: redis.url,
        REDIS_DOWN_MODE: mode,
        REDIS_WATCH_INTERVAL_MS: '200',
        // Long enough to kill Redis between the deduct and the void.
        PUBLISH_CONFIRM_TIMEOUT_MS: '2000',
        RABBITMQ_URL: through.url,
      });
    });

    afterAll(async () => {
      broker.resume();
      broker.up();
      await redis.up().catch(() => undefined);
      await api.close();
      await broker.close();
      await redis.kill();
      await stores.close();
    });

    /** The purchase's answer, once Redis took its unit (`left` remain) and died before the void. */
    async function unconfirmedThenRedisLost(goodsId: number, userId: number, left: number) {
      broker.stall();
      const answer = buy(api.http, goodsId, userId).then((response) => response);
      const direct = new Redis(redis.url);
      await waitFor(async () => (await direct.get(`seckill:{${goodsId}}:stock`)) === String(left), {
        intervalMs: 20,
        what: 'the deduct in Redis',
      });
      direct.disconnect();
      await redis.kill();
      return answer;
    }

    it('should answer 503 with the requestId, not 202; the message lost with the broker, the result says NONE and nothing was taken', async () => {
      const goodsId = await createSale(api.http, { stock: 5 });
      const response = await unconfirmedThenRedisLost(goodsId, 71_001, 4);
      expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
      expect(response.body.requestId).toMatch(UUID);

      // The held publish never reaches the broker; Redis comes back empty and is rebuilt.
      broker.down();
      broker.resume();
      broker.up();
      await redis.up();
      expect(await knownResult(api.http, goodsId, 71_001)).toEqual({ status: 'NONE' });
      expect(await ordersFor(stores, goodsId, response.body.requestId as string)).toEqual([]);
      expect(await stores.mysqlStock(goodsId)).toBe(5);
      await waitFor(async () => (await api.http.get('/health/ready')).status === 200, {
        what: 'the broker back',
      });
      await buy(api.http, goodsId, 71_001).expect(202);
    });

    it('should answer 503 with the requestId; the message reaching the broker, the result says SUCCESS for it, never NONE before', async () => {
      const goodsId = await createSale(api.http, { stock: 5 });
      // A sale that has sold already: its rebuild waits for the order messages on their way.
      await buy(api.http, goodsId, 71_003).expect(202);
      await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'an order' });
      const response = await unconfirmedThenRedisLost(goodsId, 71_002, 3);
      expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
      const requestId = response.body.requestId as string;
      expect(requestId).toMatch(UUID);

      // Redis back empty while the message is still on its way: the rebuild waits for it, and
      // so does the result (Redis's record is gone, MySQL has no order yet).
      await redis.up();
      const meanwhile = await waitFor(
        async () => {
          const answer = await resultOf(api.http, goodsId, 71_002);
          return /Redis is unavailable/.test(String(answer.body.message)) ? null : answer;
        },
        { intervalMs: 100, what: 'Redis reachable again' },
      );
      expect(`${meanwhile.status} ${meanwhile.body.code}`).toBe('503 UNAVAILABLE');

      broker.resume();
      const known = await knownResult(api.http, goodsId, 71_002);
      expect(known).toMatchObject({ status: 'SUCCESS', requestId });
      expect(await ordersFor(stores, goodsId, requestId)).toHaveLength(1);
    });
  },
);

describe('a deduct whose reply Redis never sent back, Redis cut before its void (REDIS_DOWN_MODE=database)', () => {
  const USER = 72_001;
  let redis: PrivateRedis;
  let proxy: TcpProxy;
  let api: TestApp;
  let cutAfterDeduct = false;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const through = await proxyInFront(redis.url, 6379);
    proxy = through.proxy;
    // The deduct's command carries the order message: it goes to Redis, its reply is held.
    proxy.tapClient((chunk) => {
      if (!cutAfterDeduct || !chunk.includes(`"userId":${USER},`)) return;
      cutAfterDeduct = false;
      proxy.stall('to-client');
    });
    api = await startApp({
      REDIS_URL: through.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      OUTBOX_SWEEP_ENABLED: 'true',
      OUTBOX_SWEEP_INTERVAL_MS: '200',
      OUTBOX_STALE_MS: '500',
    });
  });

  afterAll(async () => {
    proxy.resume();
    proxy.up();
    await api.close();
    await proxy.close();
    await redis.kill();
    await stores.close();
  });

  it('should answer 503 with the requestId, and the result tells the order the outbox made of it', async () => {
    const goodsId = await createSale(api.http, { stock: 5 });
    cutAfterDeduct = true;
    const answer = buy(api.http, goodsId, USER).then((response) => response);
    const direct = new Redis(redis.url);
    await waitFor(async () => (await direct.get(`seckill:{${goodsId}}:stock`)) === '4', {
      intervalMs: 20,
      what: 'the deduct in Redis',
    });
    direct.disconnect();
    proxy.down();

    const response = await answer;
    expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
    const requestId = response.body.requestId as string;
    expect(requestId).toMatch(UUID);

    // Back with its data: the outbox sweeper delivers the purchase Redis did take.
    proxy.resume();
    proxy.up();
    expect(await knownResult(api.http, goodsId, USER)).toMatchObject({
      status: 'SUCCESS',
      requestId,
    });
    expect(await ordersFor(stores, goodsId, requestId)).toHaveLength(1);
  });
});

describe('a fallback purchase whose COMMIT MySQL never answered (Redis down, REDIS_DOWN_MODE=database)', () => {
  const USER = 73_001;
  let redis: PrivateRedis;
  let mysql: TcpProxy;
  let api: TestApp;
  const stores = new Stores();
  let armed = false;
  let inserting: Socket | undefined;
  let commitSent = false;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const through = await proxyInFront(process.env.DATABASE_URL!, 3306);
    mysql = through.proxy;
    // The fallback's INSERT for this buyer, then the COMMIT on the same connection: it reaches
    // MySQL, and every reply is held from there.
    mysql.tapClient((chunk, client) => {
      if (!armed) return;
      if (chunk.includes('INSERT INTO seckill_order') && chunk.includes(`, ${USER}, `)) {
        inserting = client;
      } else if (client === inserting && chunk.includes('COMMIT')) {
        armed = false;
        commitSent = true;
        mysql.stall('to-client');
      }
    });
    api = await startApp({
      REDIS_URL: redis.url,
      DATABASE_URL: through.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
      // One buyer asks every 100 ms until the fallback opens.
      THROTTLE_PURCHASE_USER_LIMIT: '0',
    });
  });

  afterAll(async () => {
    mysql.resume();
    mysql.up();
    await redis.up().catch(() => undefined);
    await api.close();
    await mysql.close();
    await redis.kill();
    await stores.close();
  });

  it('should answer 503 with the requestId, and the result finds the order MySQL committed', async () => {
    const goodsId = await createSale(api.http, { stock: 5 });
    await redis.kill();
    armed = true;
    // 503 (nothing taken) until the fallback's barrier has passed; then the purchase whose
    // COMMIT is cut.
    const answer = waitFor(
      async () => {
        const response = await buy(api.http, goodsId, USER);
        if (commitSent) return response;
        expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
        expect(response.body).not.toHaveProperty('requestId');
        return null;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'a fallback purchase' },
    );
    const [order] = await waitFor(
      async () => {
        const rows = (await stores.orders(goodsId)).filter((row) => Number(row.user_id) === USER);
        return rows.length > 0 ? rows : null;
      },
      { timeoutMs: 20_000, what: 'the committed order' },
    );
    mysql.down();
    mysql.resume();
    mysql.up();

    const response = await answer;
    expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
    expect(response.body.requestId).toBe(order.request_id);
    const result = await waitFor(
      async () => {
        const reply = await resultOf(api.http, goodsId, USER);
        return reply.status === 200 ? reply.body : null;
      },
      { intervalMs: 100, what: 'the result' },
    );
    expect(result).toEqual({
      status: 'SUCCESS',
      requestId: order.request_id,
      orderNo: order.order_no,
    });
  });
});
