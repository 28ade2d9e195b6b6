import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import {
  DASHBOARD_SNAPSHOT_KEY,
  dashboardBuildKey,
  saleKeys,
} from '../../infra/redis/seckill-keys.js';

/**
 * What the dashboard keeps in Redis for every instance: the snapshot of the second (one instance
 * builds it, the others read it) and each sale's purchase answers per second.
 */
@Injectable()
export class DashboardStore {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  /** True when this instance takes the build of `second`'s snapshot (held `ttlMs`). */
  async claimBuild(second: number, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(dashboardBuildKey(second), '1', 'PX', ttlMs, 'NX')) === 'OK';
  }

  /** The snapshot another instance stored, or null. */
  sharedSnapshot(): Promise<string | null> {
    return this.redis.get(DASHBOARD_SNAPSHOT_KEY);
  }

  async shareSnapshot(json: string, ttlMs: number): Promise<void> {
    await this.redis.set(DASHBOARD_SNAPSHOT_KEY, json, 'PX', ttlMs);
  }

  /** Adds one second's answers of a sale (outcome -> count), kept `ttlSeconds`. */
  async addRates(
    goodsId: number,
    second: number,
    byOutcome: Iterable<[string, number]>,
    ttlSeconds: number,
  ): Promise<void> {
    const key = saleKeys(goodsId).rate(second);
    const writes: Promise<unknown>[] = [];
    for (const [outcome, count] of byOutcome) writes.push(this.redis.hincrby(key, outcome, count));
    writes.push(this.redis.expire(key, ttlSeconds));
    await Promise.all(writes);
  }
}
