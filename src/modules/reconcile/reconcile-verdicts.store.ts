import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { saleKeys } from '../../infra/redis/seckill-keys.js';

/** Whether Redis holds the sale: its stock and meta in every bucket (what a purchase needs). */
export type RedisSaleState = 'LOADED' | 'NOT_LOADED';

/** A confirmed reconcile verdict, as every instance's dashboard shows it. */
export interface SaleVerdict {
  consistent: boolean;
  /**
   * The stores differed only by cancels whose Redis restock was still on its way (not drift):
   * counted as consistent.
   */
  settling: boolean;
  /** NOT_LOADED: Redis does not hold the sale (never consistent). */
  redisState: RedisSaleState;
  /** Units unaccounted for per store; 0 when consistent, redis null when Redis lacks the sale. */
  drift: { redis: number | null; db: number };
  /** Epoch ms of the reading. */
  checkedAt: number;
}

/** Kept well past the reconcile job's interval; a sale nobody checks any more loses it. */
const VERDICT_TTL_MS = 15 * 60_000;

/**
 * The last confirmed verdict per sale, in Redis, so that every instance serves the same one and
 * no dashboard makes a reconcile of its own: the reconcile job writes it on each run, and while a
 * dashboard is open one instance at a time refreshes it (see the dashboard's sale board).
 */
@Injectable()
export class ReconcileVerdictsStore {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  async save(goodsId: number, verdict: SaleVerdict): Promise<void> {
    await this.redis.set(saleKeys(goodsId).verdict, JSON.stringify(verdict), 'PX', VERDICT_TTL_MS);
  }

  /** After a repair: the old verdict no longer holds, and the next dashboard tick refreshes it. */
  async forget(goodsId: number): Promise<void> {
    const keys = saleKeys(goodsId);
    await this.redis.del(keys.verdict, keys.verdictClaim);
  }
}

export function parseVerdict(raw: string | null | undefined): SaleVerdict | null {
  if (!raw) return null;
  try {
    const value = JSON.parse(raw) as SaleVerdict;
    if (typeof value.consistent !== 'boolean' || typeof value.checkedAt !== 'number') return null;
    // Stored by an instance that did not write the field yet.
    value.redisState ??= value.drift?.redis === null ? 'NOT_LOADED' : 'LOADED';
    return value;
  } catch {
    return null;
  }
}
