import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { scheduleSingletonJob } from '../../common/scheduling/singleton-job.js';
import { RedisLocks } from '../../infra/redis/redis-locks.js';
import { OutboxSweeper } from './outbox-sweeper.service.js';

/** Schedules only; OutboxSweeper does the work. Off with OUTBOX_SWEEP_ENABLED=false. */
@Injectable()
export class MessagingCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocks,
    private readonly sweeper: OutboxSweeper,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.outboxSweepEnabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'outbox-sweep',
      schedule: { intervalMs: this.config.outboxSweepIntervalMs },
      run: async () => {
        await this.sweeper.sweep();
      },
    });
  }
}
