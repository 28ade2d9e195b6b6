import { Logger } from '@nestjs/common';
import type { ThrottlerLimitDetail, ThrottlerStorage } from '@nestjs/throttler';
import { throttleKeys } from '../../infra/redis/seckill-keys.js';
import type { SeckillScripts } from '../../infra/redis/seckill-scripts.js';

type ThrottlerStorageRecord = Omit<ThrottlerLimitDetail, 'ttl' | 'limit' | 'key' | 'tracker'>;

const OUTAGE_LOG_EVERY_MS = 10_000;

/**
 * @nestjs/throttler's storage on the service's Redis: one atomic script per hit
 * (lua/throttle-hit.lua), so every instance spends from the same budget.
 *
 * The guard hands us the tracker as the key (see RateLimitModule's generateKey); the Redis keys
 * come from the keys file. When Redis fails the request is let through: a limiter outage must
 * not take reads down, and the purchase route answers 503 on its own once it reaches Redis.
 */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger(RedisThrottlerStorage.name);
  private lastOutageLogAt = 0;

  constructor(private readonly scripts: SeckillScripts) {}

  async increment(
    tracker: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    try {
      const hit = await this.scripts.throttleHit(
        throttleKeys(throttlerName, tracker),
        ttl,
        limit,
        blockDuration,
      );
      return {
        totalHits: hit.totalHits,
        timeToExpire: Math.ceil(hit.msToWindowEnd / 1000),
        isBlocked: hit.blocked,
        // Retry-After is whole seconds; never tell a blocked client "0".
        timeToBlockExpire: hit.blocked ? Math.max(1, Math.ceil(hit.msToBlockEnd / 1000)) : 0,
      };
    } catch (error) {
      const now = Date.now();
      if (now - this.lastOutageLogAt >= OUTAGE_LOG_EVERY_MS) {
        this.lastOutageLogAt = now;
        this.logger.warn(
          `rate limits not enforced, Redis failed: throttler=${throttlerName} ${(error as Error).message}`,
        );
      }
      return { totalHits: 0, timeToExpire: 0, isBlocked: false, timeToBlockExpire: 0 };
    }
  }
}
