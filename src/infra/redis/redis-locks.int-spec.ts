import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LuaScripts } from './lua-scripts.js';
import { purchaseUnlock } from './redis-locks.js';
import { saleKeys, type SaleKeys } from './seckill-keys.js';

describe('purchaseUnlock (real Redis)', () => {
  let redis: Redis;
  let lua: LuaScripts;
  // Goods ids far from anything the e2e tests create, unique per test of this run.
  let nextGoodsId = 950_000_000 + Math.floor(Math.random() * 90_000) * 1_000;
  let used: { keys: SaleKeys; userId: number }[] = [];

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    lua = new LuaScripts(redis);
    lua.onModuleInit();
  });

  afterEach(async () => {
    const keys = used.flatMap(({ keys, userId }) => [keys.outbox, keys.userLock(userId)]);
    used = [];
    if (keys.length > 0) await redis.del(...keys);
  });

  afterAll(async () => {
    await redis.quit();
  });

  /** A buyer's lock and its sale's outbox, holding `requestIds` as the deduct leaves them. */
  async function purchase(userId: number, lockValue: string, ...requestIds: string[]) {
    const keys = saleKeys(nextGoodsId++);
    used.push({ keys, userId });
    await redis.set(keys.userLock(userId), lockValue, 'PX', 5_000);
    for (const requestId of requestIds) await redis.zadd(keys.outbox, Date.now(), requestId);
    return { keys, lock: { lock: keys.userLock(userId), outbox: keys.outbox } };
  }

  it('should drop the lock it holds and take the confirmed request out of the outbox, and nothing else', async () => {
    const [confirmed, other] = [randomUUID(), randomUUID()];
    const { keys, lock } = await purchase(701, 'mine', confirmed, other);

    const result = await purchaseUnlock(lua, lock, 'mine', confirmed);

    expect(result).toEqual({ unlocked: true, removedFromOutbox: true });
    expect(await redis.exists(keys.userLock(701))).toBe(0);
    expect(await redis.zrange(keys.outbox, 0, -1)).toEqual([other]);
  });

  it('should leave a lock alone that a later click holds now, and still settle the outbox', async () => {
    const confirmed = randomUUID();
    const { keys, lock } = await purchase(703, 'a later click', confirmed);

    const result = await purchaseUnlock(lua, lock, 'mine', confirmed);

    expect(result).toEqual({ unlocked: false, removedFromOutbox: true });
    expect(await redis.get(keys.userLock(703))).toBe('a later click');
  });

  it('should keep the request in the outbox when no confirmed request is given', async () => {
    const unconfirmed = randomUUID();
    const { keys, lock } = await purchase(704, 'mine', unconfirmed);

    const result = await purchaseUnlock(lua, lock, 'mine', undefined);

    expect(result).toEqual({ unlocked: true, removedFromOutbox: false });
    expect(await redis.zrange(keys.outbox, 0, -1)).toEqual([unconfirmed]);
  });
});
