import { Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { APP_CONFIG } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { SeckillScripts } from '../../infra/redis/seckill-scripts.js';
import { BlocklistModule } from '../blocklist/blocklist.module.js';
import { throttlerSpecs } from './rate-limit.policy.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RedisThrottlerStorage } from './redis-throttler.storage.js';

@Module({
  imports: [
    BlocklistModule,
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG, SeckillScripts],
      useFactory: (config: AppConfig, scripts: SeckillScripts) => ({
        // The configured limits; RateLimitGuard spends those of a route's policy together.
        throttlers: throttlerSpecs(config.rateLimit).map((spec) => ({
          name: spec.name,
          limit: spec.limit,
          ttl: config.rateLimit.windowMs,
          blockDuration: config.rateLimit.blockMs,
        })),
        storage: new RedisThrottlerStorage(scripts),
      }),
    }),
  ],
  providers: [RateLimitGuard],
  exports: [RateLimitGuard, BlocklistModule],
})
export class RateLimitModule {}
