import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { scheduleSingletonJob } from '../../common/scheduling/singleton-job.js';
import { RedisLocks } from '../../infra/redis/redis-locks.js';
import { PreheatService } from './preheat.service.js';

/**
 * Schedules only; PreheatService does the work. Off with PREHEAT_CRON_ENABLED=false (preheat)
 * and SALE_EVICTION_ENABLED=false (eviction of ended sales from Redis).
 */
@Injectable()
export class PreheatCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocks,
    private readonly preheat: PreheatService,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.saleEvictionEnabled) {
      // Orders can still expire until the payment timeout after the sale's end; keep the sale's
      // keys a retention period longer than that.
      const afterEndMs = this.config.orderPaymentTimeoutMs + this.config.saleKeysRetentionMs;
      scheduleSingletonJob({
        registry: this.registry,
        locks: this.locks,
        name: 'evict-ended-sales',
        schedule: { intervalMs: this.config.saleEvictionIntervalMs },
        run: async () => {
          await this.preheat.evictEnded(afterEndMs);
        },
      });
    }
    if (!this.config.preheatCronEnabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'preheat-upcoming',
      schedule: { cron: this.config.preheatCron },
      run: async () => {
        await this.preheat.preheatUpcoming(this.config.preheatLookaheadMs);
      },
    });
  }
}
