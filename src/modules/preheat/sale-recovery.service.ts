import { Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { RedisWatchdog } from '../../infra/redis/redis-watchdog.js';
import { StockService } from '../stock/stock.service.js';
import { RecoveryLoop } from './recovery-loop.js';
import { SurvivorWipe } from './survivor-wipe.service.js';

/**
 * After Redis restarts or fails over, this instance's purchases stay closed (503, nothing sold)
 * until what survived is wiped and every open or upcoming sale is back in Redis, rebuilt from
 * MySQL. Every instance that sells keeps this guard: each notices the restart on its own
 * connection. It only watches Redis for the rebuild, which SaleRebuilder does where the
 * consumers run, so an `api` instance reopens when a worker has rebuilt the sales.
 */
@Injectable()
export class SaleRecovery implements OnModuleInit, OnApplicationShutdown {
  private readonly loop: RecoveryLoop;

  constructor(
    private readonly watchdog: RedisWatchdog,
    private readonly wipe: SurvivorWipe,
    private readonly stock: StockService,
  ) {
    this.loop = new RecoveryLoop(SaleRecovery.name, wipe, () => this.missingSales(), {
      began: 'redis restarted: purchases closed until the sales are rebuilt from MySQL',
      settled: 'sales rebuilt; purchases open again',
    });
  }

  onModuleInit(): void {
    this.loop.follow(this.watchdog);
  }

  /** Purchases are closed: Redis is being rebuilt, or not yet identified since a reconnect. */
  get recovering(): boolean {
    return this.loop.active || !this.watchdog.identifiedSinceConnect;
  }

  /** How many of the sales a restart concerns are not back in Redis yet. */
  private async missingSales(): Promise<number> {
    let missing = 0;
    for (const sale of await this.wipe.salesToRecover()) {
      if (!(await this.stock.isPreheated(sale.id))) missing++;
    }
    return missing;
  }

  onApplicationShutdown(): void {
    this.loop.stop();
  }
}
