import type { PurchaseRoute, RedisDownPolicy } from '../fallback/redis-down.policy.js';

/** What a ticket asks of the restart recovery (SaleRecoveryService). */
export interface RestartRecovery {
  /** The recovery has closed the Redis path of this goods while a restarted Redis is rebuilt. */
  closed(goodsId: number): boolean;
}

/**
 * Which store decides one purchase, cut once (PurchaseAvailabilityService) before anything is
 * read for it: the restart recovery and the outage policy asked together, with nothing changed.
 * The purchase route picks its strategy by `route` (seckill: RedisPurchaseService or
 * DatabasePurchaseService) and asks the ticket again only what may change while the purchase
 * runs; the result route reads `rebuilding` from a ticket of its own.
 */
export class PurchaseTicket {
  /** The restart recovery had closed the Redis path of this goods: it is being rebuilt. */
  readonly rebuilding: boolean;
  /** `unavailable`: 503 with nothing taken (the sale is rebuilt and REDIS_DOWN_MODE=closed). */
  readonly route: PurchaseRoute;

  constructor(
    readonly goodsId: number,
    private readonly recovery: RestartRecovery,
    private readonly policy: Pick<RedisDownPolicy, 'route'>,
  ) {
    this.rebuilding = recovery.closed(goodsId);
    this.route = policy.route(goodsId, this.rebuilding);
  }

  /**
   * Whether the Redis path is still open, asked on the Redis route once the goods' bucket count
   * is known (the first ask of a goods with buckets judged it by its goods-wide keys' master):
   * `rebuilding` when the restart recovery has closed it since, `held` when it is held from this
   * goods now (see heldFromRedis).
   */
  recheck(): 'open' | 'rebuilding' | 'held' {
    if (this.recovery.closed(this.goodsId)) return 'rebuilding';
    return this.heldFromRedis() ? 'held' : 'open';
  }

  /**
   * The Redis path is held from this goods now (another instance is opening it to MySQL, or this
   * one's marks are past their lease): asked again after the deduct, so that a 202 cannot be
   * refused later by MySQL once the fallback sells.
   */
  heldFromRedis(): boolean {
    return this.policy.route(this.goodsId, false) === 'database';
  }
}
