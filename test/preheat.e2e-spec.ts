import { describe, expect, it } from 'vitest';
import { PreheatService } from '../src/modules/preheat/preheat.service.js';
import { RedisLocksService } from '../src/infra/redis/redis-locks.service.js';
import {
  adminAuth,
  bearer,
  createSale,
  startApp,
  waitFor,
  useApp,
  acceptWithoutPublishing,
} from './support/harness.js';

describe('preheating', () => {
  const t = useApp();
  const stores = t.stores;

  it('should preheat the sales that open within the look-ahead and leave later ones cold', async () => {
    const soon = await createSale(t.http, { preheat: false, startsInMs: 60_000 });
    const later = await createSale(t.http, { preheat: false, startsInMs: 3 * 3_600_000 });
    const ended = await createSale(t.http, {
      preheat: false,
      startsInMs: -20_000,
      lastsMs: 10_000,
    });

    const results = await t.app.get(PreheatService).preheatUpcoming(10 * 60_000);
    expect(results.map((result) => result.goodsId)).toContain(soon);
    expect(await stores.redisStock(soon)).toBe(10);
    expect(await stores.redisStock(later)).toBeNull();
    expect(await stores.redisStock(ended)).toBeNull();
  });

  it('should run the scheduled preheat on one instance at a time', async () => {
    const locks = t.app.get(RedisLocksService);
    const held = await locks.tryLockJob('probe-job', 5_000);
    expect(held).not.toBeNull();
    expect(await locks.tryLockJob('probe-job', 5_000)).toBeNull();
    await held!.release();
    const again = await locks.tryLockJob('probe-job', 5_000);
    expect(again).not.toBeNull();
    await again!.release();
  });

  it('should preheat a sale by itself within its cron schedule (PREHEAT_CRON)', async () => {
    // Every 2 seconds: the sale, created after the run at start, waits for a scheduled one.
    const cron = await startApp({ PREHEAT_CRON_ENABLED: 'true', PREHEAT_CRON: '*/2 * * * * *' });
    try {
      const goodsId = await createSale(cron.http, { preheat: false, startsInMs: 30_000 });
      const created = Date.now();
      await waitFor(async () => (await stores.redisStock(goodsId)) === 10, {
        timeoutMs: 10_000,
        what: 'the cron job to preheat the sale',
      });
      // Within two periods (a run that began just before the sale was created misses it), plus
      // a run's time on a busy box: CI saw 3.7 s on two cores.
      expect(Date.now() - created).toBeLessThan(2 * 2_000 + 1_500);
    } finally {
      await cron.close();
    }
  });

  it('should rebuild buyers and stock from MySQL when Redis lost a sale, so nobody buys twice', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(601)).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    await waitFor(async () => (await stores.inflight(goodsId)) === 0, {
      what: 'in-flight drained',
    });

    // Redis forgets the sale (a restart without persistence).
    const keys = await stores.redis.keys(`seckill:{${goodsId}}:*`);
    await stores.redis.del(...keys);
    const cold = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(602))
      .expect(409);
    expect(cold.body.code).toBe('NOT_PREHEATED');

    // 503 until every order message taken before the loss is settled (an order barrier).
    const preheated = await waitFor(async () => {
      const response = await t.http
        .post(`/api/v1/admin/goods/${goodsId}/preheat`)
        .set('Authorization', adminAuth());
      if (response.status === 503) return null;
      expect(response.status).toBe(200);
      return response;
    });
    expect(preheated.body).toMatchObject({ goodsId, stock: 4 });
    const again = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(601))
      .expect(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(602)).expect(202);
  });

  it('should evict an ended sale from Redis, but not while purchases are in flight', async () => {
    const ended = await createSale(t.http, { startsInMs: -20_000, lastsMs: 10_000 });
    const open = await createSale(t.http, { stock: 5 });
    // A purchase Redis took whose order is not in MySQL yet (only the outbox knows it).
    await acceptWithoutPublishing(t.app, open, 610);

    const preheat = t.app.get(PreheatService);
    // Two hours on, both sales are over; only the one with nothing in flight goes.
    const evicted = await preheat.evictEnded(0, Date.now() + 2 * 3_600_000);
    expect(evicted).toContain(ended);
    expect(evicted).not.toContain(open);
    expect(await stores.redis.keys(`seckill:{${ended}}:*`)).toEqual([]);
    expect(await stores.redis.sismember('seckill:sales', String(ended))).toBe(0);
    expect(await stores.redisStock(open)).toBe(4);
  });
});
