import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/harness.js';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { RedisThrottlerStorage } from './redis-throttler.storage.js';
import { ThrottleScripts } from './throttle.scripts.js';

describe('RedisThrottlerStorage (real Redis)', () => {
  let redis: Redis;
  let other: Redis;
  let storage: RedisThrottlerStorage;
  let otherInstance: RedisThrottlerStorage;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    other = new Redis(process.env.REDIS_URL!);
    const lua = new LuaScriptsService(redis);
    lua.onModuleInit();
    const otherLua = new LuaScriptsService(other);
    otherLua.onModuleInit();
    const scripts = new ThrottleScripts(lua);
    const otherScripts = new ThrottleScripts(otherLua);
    storage = new RedisThrottlerStorage(scripts);
    otherInstance = new RedisThrottlerStorage(otherScripts);
  });

  afterAll(async () => {
    await redis.quit();
    await other.quit();
  });

  const tracker = () => `u:${randomUUID()}`;

  it('should count hits up to the limit without blocking', async () => {
    const who = tracker();

    const first = await storage.increment(who, 60_000, 2, 60_000, 'spec');
    const second = await storage.increment(who, 60_000, 2, 60_000, 'spec');

    expect(first).toMatchObject({ totalHits: 1, isBlocked: false, timeToBlockExpire: 0 });
    expect(second).toMatchObject({ totalHits: 2, isBlocked: false });
    expect(second.timeToExpire).toBeGreaterThan(0);
    expect(second.timeToExpire).toBeLessThanOrEqual(60);
  });

  it('should block the hit over the limit for the block duration, in whole seconds', async () => {
    const who = tracker();
    await storage.increment(who, 60_000, 1, 30_000, 'spec');

    const over = await storage.increment(who, 60_000, 1, 30_000, 'spec');

    expect(over).toMatchObject({ totalHits: 2, isBlocked: true, timeToBlockExpire: 30 });
  });

  it('should not count the hits of a blocked tracker', async () => {
    const who = tracker();
    await storage.increment(who, 60_000, 1, 60_000, 'spec');
    await storage.increment(who, 60_000, 1, 60_000, 'spec');

    const again = await storage.increment(who, 60_000, 1, 60_000, 'spec');

    expect(again).toMatchObject({ totalHits: 2, isBlocked: true });
  });

  it('should share one budget between two instances', async () => {
    const who = tracker();
    await storage.increment(who, 60_000, 2, 60_000, 'spec');
    await otherInstance.increment(who, 60_000, 2, 60_000, 'spec');

    expect(await otherInstance.increment(who, 60_000, 2, 60_000, 'spec')).toMatchObject({
      totalHits: 3,
      isBlocked: true,
    });
  });

  it('should keep budgets of different throttlers and trackers apart', async () => {
    const who = tracker();
    await storage.increment(who, 60_000, 1, 60_000, 'spec');

    expect(await storage.increment(who, 60_000, 1, 60_000, 'spec-other')).toMatchObject({
      totalHits: 1,
      isBlocked: false,
    });
    expect(await storage.increment(tracker(), 60_000, 1, 60_000, 'spec')).toMatchObject({
      totalHits: 1,
    });
  });

  it('should let the tracker through again once its window and block have passed', async () => {
    const who = tracker();
    await storage.increment(who, 200, 1, 200, 'spec');
    expect((await storage.increment(who, 200, 1, 200, 'spec')).isBlocked).toBe(true);

    const fresh = await waitFor(
      async () => {
        const hit = await storage.increment(who, 200, 1, 200, 'spec');
        return hit.isBlocked ? null : hit;
      },
      { timeoutMs: 5_000, what: 'a new window' },
    );

    expect(fresh.totalHits).toBe(1);
  });

  describe("all of a request's budgets in one call", () => {
    const budget = (throttler: string, who: string, limit: number) => ({
      throttler,
      tracker: who,
      ttl: 60_000,
      limit,
      blockDuration: 30_000,
    });

    it('should spend every budget once when none is exhausted', async () => {
      const [user, ip] = [tracker(), tracker()];

      const refusal = await storage.spend([budget('spec-user', user, 2), budget('spec-ip', ip, 2)]);

      expect(refusal).toBeUndefined();
      expect(await storage.increment(user, 60_000, 2, 60_000, 'spec-user')).toMatchObject({
        totalHits: 2,
      });
      expect(await storage.increment(ip, 60_000, 2, 60_000, 'spec-ip')).toMatchObject({
        totalHits: 2,
      });
    });

    it('should name the first budget that refuses, and not spend the budgets after it', async () => {
      const [user, ip, everyone] = [tracker(), tracker(), tracker()];
      const budgets = [
        budget('spec-user', user, 5),
        budget('spec-ip', ip, 1),
        budget('spec-all', everyone, 5),
      ];
      await storage.spend(budgets);

      const refusal = await storage.spend(budgets);

      expect(refusal).toEqual({ throttler: 'spec-ip', retryAfterSeconds: 30, local: false });
      expect(await storage.increment(user, 60_000, 5, 60_000, 'spec-user')).toMatchObject({
        totalHits: 3,
      });
      expect(await storage.increment(everyone, 60_000, 5, 60_000, 'spec-all')).toMatchObject({
        totalHits: 2,
      });
    });

    it('should refuse while a budget is blocked without counting the refused requests', async () => {
      const [user, ip] = [tracker(), tracker()];
      const budgets = [budget('spec-user', user, 1), budget('spec-ip', ip, 10)];
      await storage.spend(budgets);
      await storage.spend(budgets);

      const again = await storage.spend(budgets);

      expect(again?.throttler).toBe('spec-user');
      expect(await storage.increment(ip, 60_000, 10, 60_000, 'spec-ip')).toMatchObject({
        totalHits: 2,
      });
    });
  });

  it("should count the budgets in this instance's memory while Redis is unreachable", async () => {
    const down = new Redis({
      port: 1,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on('error', () => undefined);
    const lua = new LuaScriptsService(down);
    lua.onModuleInit();
    const offline = new RedisThrottlerStorage(new ThrottleScripts(lua));
    const budgets = [
      { throttler: 'spec', tracker: tracker(), ttl: 60_000, limit: 1, blockDuration: 30_000 },
    ];

    const first = await offline.spend(budgets);
    const second = await offline.spend(budgets);
    const otherTracker = await offline.spend([{ ...budgets[0], tracker: tracker() }]);

    expect(first).toBeUndefined();
    expect(second).toEqual({ throttler: 'spec', retryAfterSeconds: 30, local: true });
    expect(otherTracker).toBeUndefined();
    down.disconnect();
  });
});
