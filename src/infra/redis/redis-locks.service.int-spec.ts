import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LuaScriptsService } from './lua-scripts.service.js';
import { purchaseUnlock, RedisLocksService } from './redis-locks.service.js';
import { jobLockKey, saleKeys, type SaleKeys } from './seckill-keys.js';

describe('purchaseUnlock (real Redis)', () => {
  let redis: Redis;
  let lua: LuaScriptsService;
  // Goods ids far from anything the e2e tests create, unique per test of this run.
  let nextGoodsId = 950_000_000 + Math.floor(Math.random() * 90_000) * 1_000;
  let used: { keys: SaleKeys; userId: number }[] = [];

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    lua = new LuaScriptsService(redis);
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

describe('job locks stamped with the Redis server that set them (real Redis)', () => {
  let redis: Redis;
  let locks: RedisLocksService;
  const job = `probe-stamp-${randomUUID()}`;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    const lua = new LuaScriptsService(redis);
    lua.onModuleInit();
    locks = new RedisLocksService(redis, lua);
  });

  afterEach(async () => {
    await redis.del(jobLockKey(job));
  });

  afterAll(async () => {
    await redis.quit();
  });

  it('should keep a lock this server set, even one taken a moment ago', async () => {
    const held = await locks.tryLockJob(job, 30_000);
    expect(held).not.toBeNull();

    expect(await locks.dropStaleJobLock(job)).toBe(false);
    expect(await locks.tryLockJob(job, 30_000)).toBeNull();
    await held!.release();
    expect(await redis.exists(jobLockKey(job))).toBe(0);
  });

  it('should drop a lock another server set (a snapshot or a replica brought it) and let it be taken', async () => {
    // What a snapshot of another incarnation holds: its run id, then the holder's token.
    await redis.set(jobLockKey(job), `${'f'.repeat(40)}:a-holder-gone`, 'PX', 30_000);

    expect(await locks.dropStaleJobLock(job)).toBe(true);
    expect(await locks.tryLockJob(job, 30_000)).not.toBeNull();
  });

  it('should leave an unstamped lock to expire, and not release one someone else took since', async () => {
    await redis.set(jobLockKey(job), 'a redlock value', 'PX', 30_000);
    expect(await locks.dropStaleJobLock(job)).toBe(false);
    await redis.del(jobLockKey(job));

    const held = await locks.tryLockJob(job, 30_000);
    await redis.set(jobLockKey(job), 'a later holder', 'PX', 30_000);
    await held!.release();
    expect(await redis.get(jobLockKey(job))).toBe('a later holder');
  });
});
