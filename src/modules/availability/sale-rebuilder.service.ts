import { Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error.js';
import {
  RedisWatchdogService,
  type RedisRestart,
} from '../../infra/redis/redis-watchdog.service.js';
import { PreheatService } from '../preheat/preheat.service.js';
import { RecoveryLoop } from './recovery-loop.js';
import { SurvivorWipeService } from './survivor-wipe.service.js';

/**
 * After Redis restarts or fails over, rebuilds every open or upcoming sale it held (on a cluster,
 * those in the restarted master's slots) from MySQL once what survived is wiped (PreheatService.rebuild: one path at a time per sale, under its sale-state
 * lock, once the orders queue has drained). Cluster-wide work, run where the consumers run: the rebuild waits for their
 * drain. Instances that sell watch for it (SaleRecoveryService). A worker started after the restart
 * missed it, but its preheat job rebuilds a sale missing from Redis too.
 */
@Injectable()
export class SaleRebuilderService implements OnModuleInit, OnApplicationShutdown {
  private readonly loop: RecoveryLoop;

  constructor(
    private readonly watchdog: RedisWatchdogService,
    private readonly wipe: SurvivorWipeService,
    private readonly preheat: PreheatService,
  ) {
    this.loop = new RecoveryLoop(
      SaleRebuilderService.name,
      wipe,
      (restart) => this.pendingSales(restart),
      {
        began: 'redis restarted: rebuilding the sales from MySQL',
        settled: 'sales rebuilt',
      },
    );
  }

  onModuleInit(): void {
    this.loop.follow(this.watchdog);
  }

  /** Preheats (rebuilds) each sale a restart concerns; returns how many are not back yet. */
  private async pendingSales({ slots }: RedisRestart): Promise<number> {
    let pending = 0;
    for (const sale of await this.wipe.salesToRecover(slots)) {
      try {
        await this.preheat.preheat(sale.id);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        pending++;
      }
    }
    return pending;
  }

  onApplicationShutdown(): void {
    this.loop.stop();
  }
}
