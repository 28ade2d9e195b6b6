import { Inject, Injectable } from '@nestjs/common';
import { DatabasePurchaseService } from './fallback/database-purchase.service.js';
import { RedisDownPolicy, type PurchaseRoute } from './fallback/redis-down.policy.js';
import type { PurchaseAccepted } from '../seckill/purchase.types.js';
import { SaleRecoveryService } from './sale-recovery.service.js';

/**
 * Which store decides a purchase, in one place: the restart recovery (SaleRecoveryService: the Redis
 * path closed while a restarted Redis is rebuilt) and the outage policy bound from
 * REDIS_DOWN_MODE (RedisDownPolicy: a closed path refused, or sold through MySQL) together.
 */
@Injectable()
export class PurchaseAvailabilityService {
  constructor(
    private readonly recovery: SaleRecoveryService,
    @Inject(RedisDownPolicy) private readonly policy: RedisDownPolicy,
    private readonly database: DatabasePurchaseService,
  ) {}

  /** Asked first, before anything is read for the purchase. */
  route(goodsId: number): PurchaseRoute {
    return this.settled(goodsId, this.policy.route(goodsId, this.recovery.closed(goodsId)));
  }

  /**
   * The Redis path is closed for the restart's rebuild: asked again once the goods' bucket count
   * is known (the first ask of a goods with buckets judged it by its goods-wide keys' master).
   */
  rebuilding(goodsId: number): boolean {
    return this.recovery.closed(goodsId);
  }

  /**
   * The Redis path is held from this goods now (another instance is opening it to MySQL, or this
   * one's marks are past their lease): asked again on the Redis path, before the lock and after
   * the deduct, so that a 202 cannot be refused later by MySQL once the fallback sells.
   */
  heldFromRedis(goodsId: number): boolean {
    return this.settled(goodsId, this.policy.route(goodsId, false)) === 'database';
  }

  /** The purchase decided by MySQL alone (DatabasePurchaseService). */
  sellThroughDatabase(
    goodsId: number,
    userId: number,
    quantity: number,
  ): Promise<PurchaseAccepted> {
    return this.database.purchase(goodsId, userId, quantity);
  }

  private settled(goodsId: number, route: PurchaseRoute): PurchaseRoute {
    if (route !== 'database') this.database.backOnRedis(goodsId);
    return route;
  }
}
