import { Redis } from 'ioredis';
import type { RowDataPacket } from 'mysql2/promise';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminAuth,
  bearer,
  counter,
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
 * service could not know (a reply lost on its way from Redis or MySQL, a void MySQL could not
 * record), and the result route tells the outcome once it is known (the contract's Invariants).
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

/** Order messages the app's consumers have settled, whatever the outcome. */
async function consumed(api: TestApp): Promise<number> {
  let total = 0;
  for (const outcome of ['written', 'duplicate', 'rejected', 'voided', 'dead_lettered']) {
    total += await counter(api.app, 'seckill_order_messages_total', outcome);
  }
  return total;
}

/** The request id Redis voided for the goods (the 503 does not carry it). */
async function voidedRequestId(redis: PrivateRedis, goodsId: number): Promise<string> {
  const direct = new Redis(redis.url);
  try {
    const voided = await direct.zrange(`seckill:{${goodsId}}:voided`, 0, -1);
    const ids = voided.filter((id) => !id.startsWith('released:'));
    expect(ids).toHaveLength(1);
    return ids[0];
  } finally {
    direct.disconnect();
  }
}

async function voidRows(stores: Stores, requestId: string): Promise<number> {
  const [rows] = await stores.mysql.query<RowDataPacket[]>(
    'SELECT request_id FROM seckill_voided_request WHERE request_id = ?',
    [requestId],
  );
  return rows.length;
}

describe.each(['closed', 'database'])(
  'REDIS_DOWN_MODE=%s: a purchase the broker did not confirm, Redis lost before or after its void',
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

    it('should answer a plain 503, the void held in MySQL; the message lost with the broker, the result says NONE and nothing was taken', async () => {
      const goodsId = await createSale(api.http, { stock: 5 });
      const response = await unconfirmedThenRedisLost(goodsId, 71_001, 4);
      expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
      expect(response.body).not.toHaveProperty('requestId');

      // The held publish never reaches the broker; Redis comes back empty and is rebuilt.
      broker.down();
      broker.resume();
      broker.up();
      await redis.up();
      expect(await knownResult(api.http, goodsId, 71_001)).toEqual({ status: 'NONE' });
      expect(await stores.orders(goodsId)).toEqual([]);
      expect(await stores.mysqlStock(goodsId)).toBe(5);
      await waitFor(async () => (await api.http.get('/health/ready')).status === 200, {
        what: 'the broker back',
      });
      await buy(api.http, goodsId, 71_001).expect(202);
    });

    it('should answer a plain 503; the message reaching the broker is dropped, never an order: the result says NONE', async () => {
      const goodsId = await createSale(api.http, { stock: 5 });
      // A sale that has sold already: its rebuild waits for the order messages on their way.
      await buy(api.http, goodsId, 71_003).expect(202);
      await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'an order' });
      const response = await unconfirmedThenRedisLost(goodsId, 71_002, 3);
      expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
      expect(response.body).not.toHaveProperty('requestId');

      // Redis back empty while the message is still on its way: the rebuild waits for it.
      await redis.up();
      broker.resume();
      expect(await knownResult(api.http, goodsId, 71_002)).toEqual({ status: 'NONE' });
      expect(
        (await stores.orders(goodsId)).filter((order) => Number(order.user_id) === 71_002),
      ).toEqual([]);
      expect(await stores.mysqlStock(goodsId)).toBe(4);
    });

    it('should write no order for a 503 voided before Redis was lost (closed: restarted empty; database: down) when its message reaches a consumer: the stock stays, the stores agree once rebuilt, the buyer buys again', async () => {
      const USER = mode === 'closed' ? 81_001 : 82_001;
      const goodsId = await createSale(api.http, { stock: 5 });
      const before = await consumed(api);

      // The broker takes the message; its confirm and every delivery are held.
      broker.stall('to-client');
      const refused = await buy(api.http, goodsId, USER);
      expect(`${refused.status} ${refused.body.code}`).toBe('503 UNAVAILABLE');
      expect(refused.body).not.toHaveProperty('requestId');
      const requestId = await voidedRequestId(redis, goodsId);

      await redis.kill();
      if (mode === 'closed') {
        await redis.up();
        // The app has reconnected to the empty Redis: the late message meets no void there.
        await waitFor(
          async () => {
            const answer = await resultOf(api.http, goodsId, USER);
            return !/Redis is unavailable/.test(String(answer.body.message));
          },
          { intervalMs: 100, what: 'the app on the empty Redis' },
        );
      }

      // The held message reaches the consumer.
      broker.resume();
      await waitFor(async () => (await consumed(api)) > before, {
        timeoutMs: 20_000,
        what: 'the late message to be consumed',
      });
      expect(await stores.orders(goodsId)).toEqual([]);
      expect(await stores.mysqlStock(goodsId)).toBe(5);
      expect(await voidRows(stores, requestId)).toBe(1);

      if (mode === 'database') await redis.up();
      expect(await knownResult(api.http, goodsId, USER)).toEqual({ status: 'NONE' });
      const reconcile = await api.http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth())
        .expect(200);
      expect(reconcile.body).toMatchObject({
        consistent: true,
        totalStock: 5,
        dbStock: 5,
        redisStock: 5,
        inFlight: 0,
      });

      // Not blocked: buying again is one order.
      const again = await waitFor(
        async () => {
          const answer = await buy(api.http, goodsId, USER);
          return answer.status === 503 ? null : answer;
        },
        { timeoutMs: 20_000, intervalMs: 200, what: 'the sale open again' },
      );
      expect(again.status).toBe(202);
      const orders = await waitFor(
        async () => {
          const rows = await stores.orders(goodsId);
          return rows.length === 1 ? rows : null;
        },
        { what: 'the second purchase as an order' },
      );
      expect(orders[0].request_id).toBe(again.body.requestId);
      expect(await stores.mysqlStock(goodsId)).toBe(4);
    });
  },
);

describe('a purchase the broker did not confirm, MySQL unreachable to record its void', () => {
  const USER = 74_001;
  let broker: TcpProxy;
  let mysql: TcpProxy;
  let api: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    const toBroker = await proxyInFront(process.env.RABBITMQ_URL!, 5672);
    broker = toBroker.proxy;
    const toMysql = await proxyInFront(process.env.DATABASE_URL!, 3306);
    mysql = toMysql.proxy;
    api = await startApp({
      PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
      RABBITMQ_URL: toBroker.url,
      DATABASE_URL: toMysql.url,
    });
  });

  afterAll(async () => {
    broker.resume();
    mysql.up();
    await api.close();
    await broker.close();
    await mysql.close();
    await stores.close();
  });

  it('should answer 503 with the requestId, voiding nothing, and the result tells the order its late message made, never FAILED', async () => {
    const goodsId = await createSale(api.http, { stock: 5 });
    // The purchase path has read what it needs from MySQL (the goods' buckets) before the cut.
    await buy(api.http, goodsId, USER - 1).expect(202);

    // The broker takes the message, its confirm and deliveries are held; MySQL is cut.
    broker.stall('to-client');
    mysql.down();
    const response = await buy(api.http, goodsId, USER);
    expect(`${response.status} ${response.body.code}`).toBe('503 UNAVAILABLE');
    const requestId = response.body.requestId as string;
    expect(requestId).toMatch(UUID);

    // Still in flight in Redis: its result is not FAILED while the outcome is unknown.
    const seen = new Set<string>();
    const result = async () => {
      const reply = await resultOf(api.http, goodsId, USER);
      seen.add(reply.status === 200 ? String(reply.body.status) : `${reply.status}`);
      return reply;
    };
    await result();
    mysql.up();
    broker.resume();
    const known = await waitFor(
      async () => {
        const reply = await result();
        return reply.status === 200 && reply.body.status === 'SUCCESS' ? reply.body : null;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'the result to tell the order' },
    );
    expect(known).toMatchObject({ status: 'SUCCESS', requestId });
    expect(seen).not.toContain('FAILED');
    expect(await ordersFor(stores, goodsId, requestId)).toHaveLength(1);
  });
});

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
