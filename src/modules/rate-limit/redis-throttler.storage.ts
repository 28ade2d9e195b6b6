import { Logger } from '@nestjs/common';
import type { ThrottlerLimitDetail, ThrottlerStorage } from '@nestjs/throttler';
import { throttleKeys } from '../../infra/redis/seckill-keys.js';
import { LocalThrottle } from './local-throttle.js';
import type { RateLimitBudget } from './rate-limit.policy.js';
import type { ThrottleScripts, ThrottleVerdict } from './throttle.scripts.js';

type ThrottlerStorageRecord = Omit<ThrottlerLimitDetail, 'ttl' | 'limit' | 'key' | 'tracker'>;

export interface RateLimitRefusal {
  throttler: string;
  /** Whole seconds, at least 1: Retry-After never tells a blocked client "0". */
  retryAfterSeconds: number;
  /** Counted in this instance's memory, Redis having failed (nothing shared could be counted). */
  local: boolean;
}

const OUTAGE_LOG_EVERY_MS = 10_000;

/**
 * @nestjs/throttler's storage on the service's Redis (lua/throttle-hits.lua), so every instance
 * spends from the same budgets. `spend` takes all the budgets of a request in one script call:
 * the purchase route's per-user, per-IP and global budgets cost one round trip, not three.
 *
 * The Redis keys come from the keys file. When Redis fails, the same budgets are counted in this
 * instance's memory (LocalThrottle) until it answers again: a limiter outage must not take reads
 * down, nor leave them and the MySQL fallback's purchases with no limit at all, which would let
 * one account or address take the fallback's whole capacity and MySQL's reads for itself.
 */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger(RedisThrottlerStorage.name);
  private lastOutageLogAt = 0;
  private readonly local = new LocalThrottle();

  constructor(private readonly scripts: ThrottleScripts) {}

  /**
   * Spends one request from each budget in order; the first that refuses ends the walk (the
   * later ones are not spent). Undefined when the request may go on.
   */
  async spend(budgets: readonly RateLimitBudget[]): Promise<RateLimitRefusal | undefined> {
    if (budgets.length === 0) return undefined;
    const { verdict, local } = await this.hit(budgets);
    if (verdict.refused < 0) return undefined;
    return {
      throttler: budgets[verdict.refused].throttler,
      retryAfterSeconds: Math.max(1, Math.ceil(verdict.msToBlockEnd / 1000)),
      local,
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
    const { verdict } = await this.hit([
      { throttler: throttlerName, tracker, ttl, limit, blockDuration },
    ]);
    const blocked = verdict.refused === 0;
    return {
      totalHits: verdict.totalHits,
      timeToExpire: Math.ceil(verdict.msToWindowEnd / 1000),
      isBlocked: blocked,
      timeToBlockExpire: blocked ? Math.max(1, Math.ceil(verdict.msToBlockEnd / 1000)) : 0,
    };
  }

  /** The script's verdict, or this instance's own count when Redis failed. */
  private async hit(
    budgets: readonly RateLimitBudget[],
  ): Promise<{ verdict: ThrottleVerdict; local: boolean }> {
    try {
      const verdict = await this.scripts.throttleHits(
        budgets.map((budget) => ({
          keys: throttleKeys(budget.throttler, budget.tracker),
          windowMs: budget.ttl,
          limit: budget.limit,
          blockMs: budget.blockDuration,
        })),
      );
      return { verdict, local: false };
    } catch (error) {
      const now = Date.now();
      if (now - this.lastOutageLogAt >= OUTAGE_LOG_EVERY_MS) {
        this.lastOutageLogAt = now;
        this.logger.warn(
          `rate limits counted in this instance's memory, Redis failed: throttlers=${budgets.map((b) => b.throttler).join(',')} ${(error as Error).message}`,
        );
      }
      return { verdict: this.local.hit(budgets, now), local: true };
    }
  }
}
