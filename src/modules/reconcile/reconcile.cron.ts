import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { scheduleSingletonJob } from '../../common/scheduling/singleton-job.js';
import { RedisLocks } from '../../infra/redis/redis-locks.js';
import { ReconcileService } from './reconcile.service.js';

/** Schedules only; ReconcileService does the work. Off with RECONCILE_ENABLED=false. */
@Injectable()
export class ReconcileCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocks,
    private readonly reconcile: ReconcileService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.reconcileEnabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'reconcile',
      schedule: { intervalMs: this.config.reconcileIntervalMs },
      run: async () => {
        await this.reconcile.checkActiveSales();
      },
    });
  }
}
