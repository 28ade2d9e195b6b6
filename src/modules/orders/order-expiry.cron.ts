import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/config-namespace.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import { scheduleSingletonJob } from '../../infra/scheduling/singleton-job.js';
import { RedisLocksService } from '../../infra/redis/redis-locks.service.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { VoidedRequestsService } from './voided-requests.service.js';

const OVERDUE_BATCH = 500;

/**
 * Schedules only. The payment timeout normally arrives through RabbitMQ's delay queue; this
 * sweep cancels what is overdue by more than EXPIRY_SWEEP_GRACE_MS anyway (a message lost with
 * a broker's disk, a queue deleted by hand). It also prunes the voids MySQL keeps for a day
 * (VoidedRequestsService), an indexed delete that finds nothing on most runs. Off with
 * EXPIRY_SWEEP_ENABLED=false.
 */
@Injectable()
export class OrderExpiryCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig(jobsConfig) private readonly jobs: JobsConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocksService,
    private readonly lifecycle: OrderLifecycleService,
    private readonly voided: VoidedRequestsService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.jobs.expirySweep.enabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'expire-overdue-orders',
      schedule: { intervalMs: this.jobs.expirySweep.intervalMs },
      run: async () => {
        await this.lifecycle.expireOverdue(this.jobs.expirySweep.graceMs, OVERDUE_BATCH);
        await this.voided.prune();
      },
    });
  }
}
