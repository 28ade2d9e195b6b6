import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { barrierKeys } from '../../infra/redis/seckill-keys.js';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { RedisBarrierStore } from './redis-barrier.store.js';
import type { OrderPublisher } from './order.publisher.js';

describe('RedisBarrierStore (real Redis)', () => {
  let redis: Redis;
  let barriers: RedisBarrierStore;
  const publisher = {
    publishBarrier: vi.fn(async () => true),
    ordersConsumers: vi.fn(async () => 2),
  };

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    const lua = new LuaScriptsService(redis);
    lua.onModuleInit();
    barriers = new RedisBarrierStore(redis, lua, publisher as unknown as OrderPublisher);
  });

  beforeEach(async () => {
    publisher.ordersConsumers.mockResolvedValue(2);
    const keys = await redis.keys('seckill:{barrier}:*');
    if (keys.length > 0) await redis.del(...keys);
    // Two consumer sessions alive.
    await barriers.tick({ session: 's1' });
    await barriers.tick({ session: 's2' });
  });

  afterAll(async () => {
    await redis.quit();
  });

  it('should pass once its message was delivered and every consumer session drained it', async () => {
    const barrier = await barriers.open();
    expect(publisher.publishBarrier).toHaveBeenCalledWith(barrier.id);
    expect((await barriers.tick()).open).toEqual([barrier.id]);
    expect(await barriers.check(barrier)).toBe('waiting');

    await barriers.markDelivered(barrier.id);
    expect(await barriers.isDelivered(barrier.id)).toBe(true);
    await barriers.markDrained(barrier.id, 's1');
    expect(await barriers.check(barrier)).toBe('waiting');

    await barriers.markDrained(barrier.id, 's2');
    expect(await barriers.check(barrier)).toBe('passed');
  });

  it('should wait for a session that started after it opened', async () => {
    const barrier = await barriers.open();
    await barriers.markDelivered(barrier.id);
    await barriers.markDrained(barrier.id, 's1');
    await barriers.markDrained(barrier.id, 's2');
    await barriers.tick({ session: 's3' });
    publisher.ordersConsumers.mockResolvedValue(3);

    expect(await barriers.check(barrier)).toBe('waiting');
    await barriers.markDrained(barrier.id, 's3');
    expect(await barriers.check(barrier)).toBe('passed');
  });

  it('should restart when a session went away before draining: its messages went back to the queue', async () => {
    const barrier = await barriers.open();
    await barriers.markDelivered(barrier.id);
    await barriers.markDrained(barrier.id, 's1');
    await redis.zrem(barrierKeys.consumers, 's2'); // its heartbeat lapsed

    expect(await barriers.check(barrier)).toBe('restart');
  });

  it('should wait while the broker counts more consumers than have drained', async () => {
    publisher.ordersConsumers.mockResolvedValue(3);
    const barrier = await barriers.open();
    await barriers.markDelivered(barrier.id);
    await barriers.markDrained(barrier.id, 's1');
    await barriers.markDrained(barrier.id, 's2');

    expect(await barriers.check(barrier)).toBe('waiting');
  });

  it('should restart when its state was lost with the Redis server that held it', async () => {
    const barrier = await barriers.open();
    await redis.del(barrierKeys.barrier(barrier.id));
    // A late mark does not bring it back half-empty.
    await barriers.markDelivered(barrier.id);

    expect(await barriers.check(barrier)).toBe('restart');
  });

  it('should refuse to open when the broker does not confirm its message', async () => {
    publisher.publishBarrier.mockResolvedValueOnce(false);

    await expect(barriers.open()).rejects.toThrow(/not confirmed/);
  });
});
