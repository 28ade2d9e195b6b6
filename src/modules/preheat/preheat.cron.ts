import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/config-namespace.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { scheduleSingletonJob } from '../../infra/scheduling/singleton-job.js';
import { RedisLocksService } from '../../infra/redis/redis-locks.service.js';
import { PreheatService } from './preheat.service.js';

/**
 * Schedules only; PreheatService does the work. Off with PREHEAT_CRON_ENABLED=false (preheat)
 * and SALE_EVICTION_ENABLED=false (eviction of ended sales from Redis).
 */
@Injectable()
export class PreheatCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig(jobsConfig) private readonly jobs: JobsConfig,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocksService,
    private readonly preheat: PreheatService,
  ) {}

  onApplicationBootstrap(): void {
    if (this.jobs.saleEviction.enabled) {
      // Orders can still expire until the payment timeout after the sale's end; keep the sale's
      // keys a retention period longer than that.
      const afterEndMs =
        this.seckill.orderPaymentTimeoutMs + this.jobs.saleEviction.keysRetentionMs;
      scheduleSingletonJob({
        registry: this.registry,
        locks: this.locks,
        name: 'evict-ended-sales',
        schedule: { intervalMs: this.jobs.saleEviction.intervalMs },
        run: async () => {
          await this.preheat.evictEnded(afterEndMs);
        },
      });
    }
    if (!this.jobs.preheat.enabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'preheat-upcoming',
      schedule: { cron: this.jobs.preheat.cron },
      run: async () => {
        await this.preheat.preheatUpcoming(this.jobs.preheat.lookaheadMs);
      },
    });
  }
}
