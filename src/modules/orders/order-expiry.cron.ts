import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { scheduleSingletonJob } from '../../common/scheduling/singleton-job.js';
import { RedisLocks } from '../../infra/redis/redis-locks.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { VoidedRequests } from './voided-requests.service.js';

const OVERDUE_BATCH = 500;

/**
 * Schedules only. The payment timeout normally arrives through RabbitMQ's delay queue; this
 * sweep cancels what is overdue by more than EXPIRY_SWEEP_GRACE_MS anyway (a message lost with
 * a broker's disk, a queue deleted by hand). It also prunes the voids MySQL keeps for a day
 * (VoidedRequests), an indexed delete that finds nothing on most runs. Off with
 * EXPIRY_SWEEP_ENABLED=false.
 */
@Injectable()
export class OrderExpiryCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocks,
    private readonly lifecycle: OrderLifecycleService,
    private readonly voided: VoidedRequests,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.expirySweepEnabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'expire-overdue-orders',
      schedule: { intervalMs: this.config.expirySweepIntervalMs },
      run: async () => {
        await this.lifecycle.expireOverdue(this.config.expirySweepGraceMs, OVERDUE_BATCH);
        await this.voided.prune();
      },
    });
  }
}
