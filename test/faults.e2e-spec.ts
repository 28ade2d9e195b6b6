import { describe, expect, it } from 'vitest';
import { adminAuth, bearer, createSale, useApp, waitFor } from './support/harness.js';
import { recordChaos, secondsSince } from './support/chaos-report.js';

/**
 * Real faults between the app and real services: a TCP proxy in front of RabbitMQ or MySQL that
 * the test cuts and restores. The shared services themselves are never touched.
 */
describe('faults: broker connection lost', () => {
  const t = useApp({ PUBLISH_CONFIRM_TIMEOUT_MS: '500' }, { behindProxy: 'RABBITMQ_URL' });
  const stores = t.stores;

  it('should answer 503 taking nothing while the broker is gone, report not ready, and recover by itself', async () => {
    const goodsId = await createSale(t.http, { stock: 50 });
    const before = Array.from({ length: 20 }, (_, i) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(700 + i)),
    );
    // The connection drops while those purchases are being published.
    const cut = new Promise<void>((resolve) =>
      setImmediate(() => {
        t.proxy.down();
        resolve();
      }),
    );
    const [answers] = await Promise.all([Promise.all(before), cut]);
    for (const answer of answers) expect([202, 503]).toContain(answer.status);

    await waitFor(async () => (await t.http.get('/health/ready')).status === 503, {
      what: 'readiness to drop',
    });
    const refused = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(799))
      .expect(503);
    expect(refused.body.code).toBe('UNAVAILABLE');
    expect(await stores.redisBuyers(goodsId)).not.toHaveProperty('799');

    t.proxy.up();
    const healedAt = Date.now();
    await waitFor(async () => (await t.http.get('/health/ready')).status === 200, {
      timeoutMs: 30_000,
      what: 'the app to reconnect',
    });
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(799)).expect(202);

    // Every purchase Redis still holds becomes exactly one order; the refused ones hold nothing.
    await waitFor(
      async () =>
        (await stores.inflight(goodsId)) === 0 &&
        (await stores.redis.zcard(`seckill:{${goodsId}}:outbox`)) === 0,
      { timeoutMs: 30_000, what: 'in-flight purchases to settle' },
    );
    const accepted = answers.filter((answer) => answer.status === 202).length + 1;
    await recordChaos(stores, {
      scenario: 'broker connection cut',
      fault: 'RabbitMQ connection cut mid-publish, then refused until restored',
      goodsId,
      requests: answers.length + 2,
      accepted,
      recoveredSeconds: secondsSince(healedAt),
    });
    const orders = await stores.orders(goodsId);
    expect(orders.length).toBeGreaterThanOrEqual(accepted);
    expect(orders.length).toBe(50 - (await stores.redisStock(goodsId))!);
    expect(await stores.mysqlStock(goodsId)).toBe(50 - orders.length);
    const report = await t.http
      .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
      .set('Authorization', adminAuth())
      .expect(200);
    expect(report.body).toMatchObject({ consistent: true, inFlight: 0 });
  });
});

describe('faults: MySQL lost during the drain', () => {
  const t = useApp({}, { behindProxy: 'DATABASE_URL' });
  const stores = t.stores;

  it('should keep orders waiting in RabbitMQ while MySQL is gone and write each exactly once after', async () => {
    const goodsId = await createSale(t.http, { stock: 30 });
    t.proxy.down();
    // Purchases only need Redis and RabbitMQ: the sale goes on.
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(800 + i)),
      ),
    );
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(30);
    await waitFor(async () => (await t.http.get('/health/ready')).status === 503, {
      what: 'readiness to drop',
    });
    expect(await stores.orders(goodsId)).toHaveLength(0);
    expect(await stores.inflight(goodsId)).toBe(30);

    t.proxy.up();
    const healedAt = Date.now();
    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length >= 30 ? rows : null;
      },
      { timeoutMs: 40_000, what: 'the orders to land after MySQL is back' },
    );
    await recordChaos(stores, {
      scenario: 'MySQL cut during the drain',
      fault: 'MySQL connections cut and refused while 30 orders wait',
      goodsId,
      requests: answers.length,
      accepted: answers.filter((answer) => answer.status === 202).length,
      recoveredSeconds: secondsSince(healedAt),
    });
    expect(orders).toHaveLength(30);
    expect(new Set(orders.map((order) => order.request_id)).size).toBe(30);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    await waitFor(async () => (await stores.inflight(goodsId)) === 0, {
      what: 'in flight drained',
    });
    const report = await t.http
      .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
      .set('Authorization', adminAuth())
      .expect(200);
    expect(report.body).toMatchObject({ consistent: true, redisStock: 0, dbStock: 0 });
  });
});
