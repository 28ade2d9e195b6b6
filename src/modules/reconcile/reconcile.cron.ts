import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/config-namespace.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import { scheduleSingletonJob } from '../../infra/scheduling/singleton-job.js';
import { RedisLocksService } from '../../infra/redis/redis-locks.service.js';
import { ReconcileChecksService } from './reconcile-checks.service.js';

/** Schedules only; ReconcileChecksService does the work. Off with RECONCILE_ENABLED=false. */
@Injectable()
export class ReconcileCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig(jobsConfig) private readonly jobs: JobsConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocksService,
    private readonly checks: ReconcileChecksService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.jobs.reconcile.enabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'reconcile',
      schedule: { intervalMs: this.jobs.reconcile.intervalMs },
      run: async () => {
        await this.checks.checkActiveSales();
      },
    });
  }
}
