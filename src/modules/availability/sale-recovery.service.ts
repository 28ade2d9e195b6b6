import { Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { RedisWatchdogService, type SlotScope } from '../../infra/redis/redis-watchdog.service.js';
import { BucketCountsStore } from '../sale-store/bucket-counts.store.js';
import { SaleLoaderStore } from '../sale-store/sale-loader.store.js';
import { RecoveryLoop } from './recovery-loop.js';
import { SurvivorWipeService } from './survivor-wipe.service.js';

/**
 * After Redis restarts or fails over, this instance's purchases stay closed (503, nothing sold)
 * until what survived is wiped and every open or upcoming sale is back in Redis, rebuilt from
 * MySQL. On a cluster only the sales in the slots of the master that restarted are closed; the
 * others go on selling. Every instance that sells keeps this guard: each notices the restart on
 * its own connection. It only watches Redis for the rebuild, which SaleRebuilderService does where the
 * consumers run, so an `api` instance reopens when a worker has rebuilt the sales.
 */
@Injectable()
export class SaleRecoveryService implements OnModuleInit, OnApplicationShutdown {
  private readonly loop: RecoveryLoop;

  constructor(
    private readonly watchdog: RedisWatchdogService,
    private readonly wipe: SurvivorWipeService,
    private readonly buckets: BucketCountsStore,
    private readonly loader: SaleLoaderStore,
  ) {
    this.loop = new RecoveryLoop(
      SaleRecoveryService.name,
      wipe,
      ({ slots }) => this.missingSales(slots),
      {
        began: 'redis restarted: purchases closed until the sales are rebuilt from MySQL',
        settled: 'sales rebuilt; purchases open again',
      },
    );
  }

  onModuleInit(): void {
    this.loop.follow(this.watchdog);
  }

  /**
   * Purchases of this sale are closed: the Redis server (master) holding it is being rebuilt,
   * or not yet identified since a reconnect.
   */
  closed(goodsId: number): boolean {
    // The bucket count is known here: the purchase read it (homeKeys) just before asking.
    const shards = this.buckets.known(goodsId);
    return this.loop.covers(goodsId, shards) || !this.watchdog.identifiedFor(goodsId, shards);
  }

  /** How many of the sales a restart concerns are not back in Redis yet. */
  private async missingSales(slots: SlotScope): Promise<number> {
    let missing = 0;
    for (const sale of await this.wipe.salesToRecover(slots)) {
      if (!(await this.loader.isPreheated(sale.id))) missing++;
    }
    return missing;
  }

  onApplicationShutdown(): void {
    this.loop.stop();
  }
}
