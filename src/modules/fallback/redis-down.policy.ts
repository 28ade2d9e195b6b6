import { isDependencyFailure } from '../../common/errors/dependency-errors.js';
import type { BarrierStore } from '../messaging/barrier-store.js';
import type { FallbackGateService } from './fallback-gate.service.js';

/** Which store decides a purchase now; `unavailable` answers 503 with nothing taken. */
export type PurchaseRoute = 'redis' | 'database' | 'unavailable';

/**
 * What the service does while Redis cannot be trusted for a sale (REDIS_DOWN_MODE), bound once in
 * FallbackModule; nothing else reads the mode. `closed`: purchases get 503 until Redis is back
 * and rebuilt. `database`: MySQL sells meanwhile (DatabasePurchaseService), and the order-side paths
 * that would wait for Redis go on without it, the goods marked for a rebuild from MySQL before
 * Redis sells it again.
 */
export abstract class RedisDownPolicy {
  /** Whether the fallback's own loops run (FallbackGateService on the api, FallbackReturnService on workers). */
  abstract readonly sellsThroughDatabase: boolean;

  /** `redisClosed`: the restart recovery has closed the Redis path for this goods. */
  abstract route(goodsId: number, redisClosed: boolean): PurchaseRoute;

  /**
   * A Redis step of the order side (claim, complete, a cancel's restock) failed with `error`:
   * true when the caller may go on without it, once it has marked the goods for a rebuild.
   */
  abstract goesOnWithoutRedis(error: unknown): boolean;

  /** The barrier stores an order consumer beats in and drains (ORDER_BARRIER_STORES). */
  abstract barrierStores(redis: BarrierStore, database: BarrierStore): BarrierStore[];
}

export class ClosedWhileRedisDownPolicy extends RedisDownPolicy {
  readonly sellsThroughDatabase = false;

  route(_goodsId: number, redisClosed: boolean): PurchaseRoute {
    return redisClosed ? 'unavailable' : 'redis';
  }

  goesOnWithoutRedis(): boolean {
    return false;
  }

  barrierStores(redis: BarrierStore): BarrierStore[] {
    return [redis];
  }
}

export class SellThroughDatabasePolicy extends RedisDownPolicy {
  readonly sellsThroughDatabase = true;

  /** `gate`: tells, per goods, whether Redis may sell it now; switched on here. */
  constructor(private readonly gate: FallbackGateService) {
    super();
    gate.enable();
  }

  route(goodsId: number, redisClosed: boolean): PurchaseRoute {
    return redisClosed || this.gate.holdsRedisPath(goodsId) ? 'database' : 'redis';
  }

  goesOnWithoutRedis(error: unknown): boolean {
    return isDependencyFailure(error);
  }

  barrierStores(redis: BarrierStore, database: BarrierStore): BarrierStore[] {
    return [redis, database];
  }
}
