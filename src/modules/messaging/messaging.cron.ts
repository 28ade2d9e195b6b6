import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/config-namespace.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import { scheduleSingletonJob } from '../../infra/scheduling/singleton-job.js';
import { RedisLocksService } from '../../infra/redis/redis-locks.service.js';
import { OutboxSweeperService } from './outbox-sweeper.service.js';

/** Schedules only; OutboxSweeperService does the work. Off with OUTBOX_SWEEP_ENABLED=false. */
@Injectable()
export class MessagingCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig(jobsConfig) private readonly jobs: JobsConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocksService,
    private readonly sweeper: OutboxSweeperService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.jobs.outboxSweep.enabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'outbox-sweep',
      schedule: { intervalMs: this.jobs.outboxSweep.intervalMs },
      run: async () => {
        await this.sweeper.sweep();
      },
    });
  }
}
