import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminAuth,
  bearer,
  createSale,
  startApp,
  Stores,
  useApp,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { newBuyersUntilAccepted, PrivateRedis } from './support/private-redis.js';
import { proxyInFront } from './support/tcp-proxy.js';
import { REDIS_COMMAND_TIMEOUT_MS } from '../src/infra/redis/redis.constants.js';

const unavailable = { statusCode: 503, code: 'UNAVAILABLE', message: expect.any(String) };

describe('outages: Redis known to be down, REDIS_DOWN_MODE=closed', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    // Closed: purchases are refused, not decided by MySQL (test/redis-down-fallback covers that).
    // The 200 buyers share one address, whose budget (counted in memory while Redis is down)
    // would refuse half of them first.
    t = await startApp({
      REDIS_URL: redis.url,
      REDIS_DOWN_MODE: 'closed',
      THROTTLE_PURCHASE_IP_LIMIT: '0',
    });
  });

  afterAll(async () => {
    await t.close();
    await redis.kill();
    await stores.close();
  });

  it('should answer every purchase 503 at once while Redis is down, not after the command timeout', async () => {
    const goodsId = await createSale(t.http, { stock: 500 });
    await redis.kill();

    const latencies: number[] = [];
    const answers = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const startedAt = performance.now();
        const response = await t.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(1_000 + i));
        latencies.push(performance.now() - startedAt);
        return response;
      }),
    );

    for (const answer of answers) expect(answer.body).toEqual(unavailable);
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.ceil(latencies.length * 0.99) - 1];
    // Generous for a loaded 2-core box, and still well under REDIS_COMMAND_TIMEOUT_MS (5 s), which
    // a purchase waiting on a dead connection would take.
    expect(p99).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS / 2);
    expect(await stores.orders(goodsId)).toHaveLength(0);
  });
});

describe('outages: a connection to Redis gone silent (half-open)', () => {
  it('should drop it once a check gets no answer within the command timeout, and sell again on a new one', async () => {
    const redis = await PrivateRedis.start();
    const { proxy, url } = await proxyInFront(redis.url, 6379);
    const t = await startApp({ REDIS_URL: url, REDIS_DOWN_MODE: 'closed' });
    try {
      const goodsId = await createSale(t.http, { stock: 5 });
      const buy = (userId: number) =>
        t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
      await buy(1_501).expect(202);

      // Redis is alive, but what goes over the open connection is lost; ioredis never closes it.
      proxy.silenceOpen();
      await newBuyersUntilAccepted(buy, 1_502);
      expect((await buy(1_501).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    } finally {
      await t.close();
      await proxy.close();
      await redis.kill();
    }
  });
});

describe('outages: MySQL down outside the purchase route', () => {
  const t = useApp({}, { behindProxy: 'DATABASE_URL' });

  it('should answer 503 UNAVAILABLE on the goods, result, order and admin routes and change nothing', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const unreadGoodsId = await createSale(t.http, { stock: 5 });
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(901)).expect(202);
    const [order] = await waitFor(async () => {
      const rows = await t.stores.orders(goodsId);
      return rows.length === 1 ? rows : null;
    });

    t.proxy.down();
    const owner = bearer(901);
    const calls: [string, () => Promise<{ body: unknown }>][] = [
      ['goods', () => t.http.get(`/api/v1/goods/${unreadGoodsId}`)],
      // 902 never bought: Redis has no word, so MySQL must be asked.
      [
        'result',
        () => t.http.get(`/api/v1/seckill/${goodsId}/result`).set('Authorization', bearer(902)),
      ],
      ['order', () => t.http.get(`/api/v1/orders/${order.order_no}`).set('Authorization', owner)],
      [
        'pay',
        () => t.http.post(`/api/v1/orders/${order.order_no}/pay`).set('Authorization', owner),
      ],
      [
        'cancel',
        () => t.http.post(`/api/v1/orders/${order.order_no}/cancel`).set('Authorization', owner),
      ],
      [
        'reconcile',
        () =>
          t.http.get(`/api/v1/admin/goods/${goodsId}/reconcile`).set('Authorization', adminAuth()),
      ],
    ];
    for (const [route, call] of calls) {
      expect({ route, body: (await call()).body }).toEqual({ route, body: unavailable });
    }

    t.proxy.up();
    expect((await t.stores.orders(goodsId))[0].status).toBe('PENDING_PAYMENT');
    expect(await t.stores.redisStock(goodsId)).toBe(4);
  });
});
