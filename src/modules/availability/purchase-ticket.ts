import type { PurchaseRoute } from '../fallback/redis-down.policy.js';

/**
 * Which store decides one purchase, cut once by PurchaseAvailabilityService before anything is
 * read for it. The purchase route picks its strategy by `route` (seckill: RedisPurchaseService or
 * DatabasePurchaseService) and asks the ticket again only what may change while the purchase
 * runs; the result route reads `rebuilding` from a ticket of its own.
 */
export interface PurchaseTicket {
  readonly goodsId: number;
  /** `unavailable`: 503 with nothing taken (the sale is rebuilt and REDIS_DOWN_MODE=closed). */
  readonly route: PurchaseRoute;
  /** The restart recovery had closed the Redis path of this goods: it is being rebuilt. */
  readonly rebuilding: boolean;
  /**
   * The restart recovery has closed the Redis path since: asked on the Redis route once the
   * goods' bucket count is known (the first ask of a goods with buckets judged it by its
   * goods-wide keys' master).
   */
  rebuildingNow(): boolean;
  /**
   * The Redis path is held from this goods now (another instance is opening it to MySQL, or this
   * one's marks are past their lease): asked on the Redis route before the lock and after the
   * deduct, so that a 202 cannot be refused later by MySQL once the fallback sells.
   */
  heldFromRedis(): boolean;
}
