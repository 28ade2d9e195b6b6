import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LuaScripts } from '../../infra/redis/lua-scripts.js';
import { queueKeys, saleKeys } from '../../infra/redis/seckill-keys.js';
import { LoadScripts } from '../sale-store/load-scripts.js';
import { ADMIT_BATCH, JoinCode, QueueScripts, type TickParams } from './queue-scripts.js';

const HOUR = 60 * 60 * 1000;

describe("the waiting room's scripts (real Redis)", () => {
  let redis: Redis;
  let queue: QueueScripts;
  let load: LoadScripts;
  // Goods ids far from anything the e2e tests create, unique per run.
  const goodsId = 910_000_000 + Math.floor(Math.random() * 90_000);

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    const lua = new LuaScripts(redis);
    lua.onModuleInit();
    queue = new QueueScripts(lua);
    load = new LoadScripts(lua);
  });

  afterEach(async () => {
    await redis.del(
      ...Object.values(queueKeys(goodsId)),
      saleKeys(goodsId).stock,
      saleKeys(goodsId).meta,
    );
  });

  afterAll(async () => {
    await redis.quit();
  });

  it('should admit a pre-queue larger than a batch in the places its standings showed, each buyer once', async () => {
    const buyers = Array.from({ length: ADMIT_BATCH + 500 }, (_, i) => 5_000 + i);
    const far = Date.now() + HOUR;
    const window = { opensAt: 0, startAt: far, endAt: far + HOUR };
    await load.preheat(saleKeys(goodsId), {
      totalStock: buyers.length,
      stock: buyers.length,
      startAt: new Date(far),
      endAt: new Date(far + HOUR),
      perUserLimit: 1,
      admission: 'queue',
    });
    const joined = await Promise.all(buyers.map((userId) => queue.join(goodsId, userId, window)));
    expect(joined.every((code) => code === JoinCode.Joined)).toBe(true);
    expect((await queue.status(goodsId, buyers[0])).ahead).toBeNull();

    // The start, as the ticking instance sees it; paused, the tick draws the seed and admits none.
    const startAt = Date.now() - 1;
    const params = (paused: boolean): TickParams => ({
      startAt,
      endAt: startAt + HOUR,
      admitPerSecond: 100_000,
      admissionTtlMs: HOUR,
      stockFactor: 1,
      seedCandidate: randomBytes(16).toString('hex'),
      paused,
    });
    expect(await queue.tick(goodsId, params(true))).toEqual({
      admitted: 0,
      lapsed: 0,
      drawn: true,
    });
    const places = new Map<number, number>();
    for (const userId of buyers) {
      const standing = await queue.status(goodsId, userId);
      expect(standing.state).toBe('WAITING');
      places.set(userId, standing.ahead!);
    }
    expect([...places.values()].sort((a, b) => a - b)).toEqual(buyers.map((_, i) => i));
    // Not the join order (a chance of 1 in 2,500! otherwise).
    expect(buyers.map((userId) => places.get(userId))).not.toEqual(buyers.map((_, i) => i));

    const admittedBy = async () =>
      new Set((await redis.zrange(queueKeys(goodsId).admitted, 0, -1)).map(Number));
    expect(await queue.tick(goodsId, params(false))).toMatchObject({
      admitted: ADMIT_BATCH,
      drawn: false,
    });
    const first = await admittedBy();
    expect(first).toEqual(new Set(buyers.filter((userId) => places.get(userId)! < ADMIT_BATCH)));
    expect((await queue.tick(goodsId, params(false))).admitted).toBe(500);
    expect((await admittedBy()).size).toBe(buyers.length);
    expect((await queue.tick(goodsId, params(false))).admitted).toBe(0);

    // A buyer who joins now goes behind the whole pre-queue, and is admitted next.
    expect(await queue.join(goodsId, 99, { ...window, startAt })).toBe(JoinCode.Joined);
    expect((await queue.room(goodsId)).waiting).toBe(1);
    expect((await queue.status(goodsId, 99)).ahead).toBe(0);
  });
});
