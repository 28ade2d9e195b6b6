import { Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { rateLimitConfig, type RateLimitConfig } from '../../config/rate-limit.config.js';
import { BlocklistModule } from '../blocklist/blocklist.module.js';
import { throttlerSpecs } from './rate-limit.policy.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RedisThrottlerStorage } from './redis-throttler.storage.js';
import { ThrottleScripts } from './throttle.scripts.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * A module of its own: the guard's autoban counts through these scripts, and so does the storage,
 * which ThrottlerModule builds (and imports it for).
 */
@Module({ providers: [ThrottleScripts], exports: [ThrottleScripts] })
class ThrottleScriptsModule {}

@Module({
  imports: [
    MetricsModule,
    BlocklistModule,
    ThrottleScriptsModule,
    ThrottlerModule.forRootAsync({
      imports: [ThrottleScriptsModule],
      inject: [rateLimitConfig.KEY, ThrottleScripts],
      useFactory: (rateLimit: RateLimitConfig, scripts: ThrottleScripts) => ({
        // The configured limits; RateLimitGuard spends those of a route's policy together.
        throttlers: throttlerSpecs(rateLimit.throttle).map((spec) => ({
          name: spec.name,
          limit: spec.limit,
          ttl: rateLimit.throttle.windowMs,
          blockDuration: rateLimit.throttle.blockMs,
        })),
        storage: new RedisThrottlerStorage(scripts),
      }),
    }),
  ],
  providers: [RateLimitGuard],
  exports: [RateLimitGuard, BlocklistModule],
})
export class RateLimitModule {}
