import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { BLOCKLIST_CHANNEL, BLOCKLIST_KEY } from '../../infra/redis/seckill-keys.js';
import { BlocklistScripts } from './blocklist.scripts.js';

/**
 * The blocklist in Redis: one hash of entries (field `type:value` -> the entry's JSON), shared by
 * every instance, and the channel that announces each change.
 */
@Injectable()
export class BlocklistStore {
  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly scripts: BlocklistScripts,
  ) {}

  async save(field: string, json: string): Promise<void> {
    await this.redis.hset(BLOCKLIST_KEY, field, json);
  }

  /** How many entries it removed (0 or 1). */
  delete(field: string): Promise<number> {
    return this.redis.hdel(BLOCKLIST_KEY, field);
  }

  /** Every entry, field -> JSON. */
  readAll(): Promise<Record<string, string>> {
    return this.redis.hgetall(BLOCKLIST_KEY);
  }

  /** Drops each `[field, json]` read as expired, if it still holds that JSON. */
  prune(expired: readonly [string, string][]): Promise<number> {
    return this.scripts.prune(BLOCKLIST_KEY, expired);
  }

  /** Tells every instance (BLOCKLIST_CHANNEL) of a change; a lost message is caught by the refresh. */
  async announce(message: string): Promise<void> {
    await this.redis.publish(BLOCKLIST_CHANNEL, message);
  }
}
