import { Logger } from '@nestjs/common';
import type { ThrottlerLimitDetail, ThrottlerStorage } from '@nestjs/throttler';
import { throttleKeys } from '../../infra/redis/seckill-keys.js';
import type { SeckillScripts, ThrottleVerdict } from '../../infra/redis/seckill-scripts.js';

type ThrottlerStorageRecord = Omit<ThrottlerLimitDetail, 'ttl' | 'limit' | 'key' | 'tracker'>;

/** One budget a request spends: a throttler's limits for one tracker. */
export interface RateLimitBudget {
  throttler: string;
  tracker: string;
  /** Window, ms. */
  ttl: number;
  limit: number;
  /** How long a tracker over the limit is refused, ms. */
  blockDuration: number;
}

export interface RateLimitRefusal {
  throttler: string;
  /** Whole seconds, at least 1: Retry-After never tells a blocked client "0". */
  retryAfterSeconds: number;
}

const OUTAGE_LOG_EVERY_MS = 10_000;

/**
 * @nestjs/throttler's storage on the service's Redis (lua/throttle-hits.lua), so every instance
 * spends from the same budgets. `spend` takes all the budgets of a request in one script call:
 * the purchase route's per-user, per-IP and global budgets cost one round trip, not three.
 *
 * The Redis keys come from the keys file. When Redis fails the request is let through: a limiter
 * outage must not take reads down, and the purchase route answers 503 on its own once it
 * reaches Redis.
 */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger(RedisThrottlerStorage.name);
  private lastOutageLogAt = 0;

  constructor(private readonly scripts: SeckillScripts) {}

  /**
   * Spends one request from each budget in order; the first that refuses ends the walk (the
   * later ones are not spent). Undefined when the request may go on.
   */
  async spend(budgets: readonly RateLimitBudget[]): Promise<RateLimitRefusal | undefined> {
    if (budgets.length === 0) return undefined;
    const verdict = await this.hit(budgets);
    if (verdict === undefined || verdict.refused < 0) return undefined;
    return {
      throttler: budgets[verdict.refused].throttler,
      retryAfterSeconds: Math.max(1, Math.ceil(verdict.msToBlockEnd / 1000)),
    };
  }

  /** ThrottlerStorage's single-budget form. */
  async increment(
    tracker: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const verdict = await this.hit([
      { throttler: throttlerName, tracker, ttl, limit, blockDuration },
    ]);
    if (verdict === undefined) {
      return { totalHits: 0, timeToExpire: 0, isBlocked: false, timeToBlockExpire: 0 };
    }
    const blocked = verdict.refused === 0;
    return {
      totalHits: verdict.totalHits,
      timeToExpire: Math.ceil(verdict.msToWindowEnd / 1000),
      isBlocked: blocked,
      timeToBlockExpire: blocked ? Math.max(1, Math.ceil(verdict.msToBlockEnd / 1000)) : 0,
    };
  }

  /** The script's verdict, or undefined when Redis failed (the request is let through). */
  private async hit(budgets: readonly RateLimitBudget[]): Promise<ThrottleVerdict | undefined> {
    try {
      return await this.scripts.throttleHits(
        budgets.map((budget) => ({
          keys: throttleKeys(budget.throttler, budget.tracker),
          windowMs: budget.ttl,
          limit: budget.limit,
          blockMs: budget.blockDuration,
        })),
      );
    } catch (error) {
      const now = Date.now();
      if (now - this.lastOutageLogAt >= OUTAGE_LOG_EVERY_MS) {
        this.lastOutageLogAt = now;
        this.logger.warn(
          `rate limits not enforced, Redis failed: throttlers=${budgets.map((b) => b.throttler).join(',')} ${(error as Error).message}`,
        );
      }
      return undefined;
    }
  }
}
