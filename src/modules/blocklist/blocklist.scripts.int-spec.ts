import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { BlocklistScripts } from './blocklist.scripts.js';

describe('BlocklistScripts.prune (real Redis)', () => {
  let redis: Redis;
  let scripts: BlocklistScripts;
  // A hash of this test's own, never the service's blocklist.
  const key = `seckill:test:blocklist-prune:${randomUUID()}`;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    const lua = new LuaScriptsService(redis);
    lua.onModuleInit();
    scripts = new BlocklistScripts(lua);
  });

  afterAll(async () => {
    await redis.del(key);
    await redis.quit();
  });

  it('drops each entry that is still as it was read, and keeps one written again since', async () => {
    await redis.hset(key, 'user:1', 'lapsed-1', 'user:2', 'written-again', 'user:3', 'live');

    const dropped = await scripts.prune(key, [
      ['user:1', 'lapsed-1'],
      ['user:2', 'lapsed-2'],
      ['user:4', 'gone-already'],
    ]);

    expect(dropped).toBe(1);
    expect(await redis.hgetall(key)).toEqual({ 'user:2': 'written-again', 'user:3': 'live' });
  });
});
