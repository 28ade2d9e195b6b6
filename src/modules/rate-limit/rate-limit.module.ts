import { ExecutionContext, Module } from '@nestjs/common';
import { normalizeIp, ThrottlerModule, type ThrottlerOptions } from '@nestjs/throttler';
import { APP_CONFIG } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { SeckillScripts } from '../../infra/redis/seckill-scripts.js';
import type { AuthenticatedRequest } from '../auth/auth.decorators.js';
import { rateLimitPolicyOf, throttlerSpecs, type ThrottlerSpec } from './rate-limit.policy.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RedisThrottlerStorage } from './redis-throttler.storage.js';

const request = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<AuthenticatedRequest>();

/**
 * `request.ip` is Fastify's: the peer address, or the client named in X-Forwarded-For only when
 * the peer is in TRUSTED_PROXIES (bootstrap.ts sets `trustProxy`). An IPv6 client is limited
 * by its /64, which it usually owns whole.
 */
const trackers = {
  user: (req: AuthenticatedRequest) => `u:${req.user!.userId}`,
  ip: (req: AuthenticatedRequest) => `ip:${normalizeIp(req.ip)}`,
  global: () => 'all',
};

function toThrottler(spec: ThrottlerSpec, config: AppConfig): ThrottlerOptions {
  return {
    name: spec.name,
    limit: spec.limit,
    ttl: config.rateLimit.windowMs,
    blockDuration: config.rateLimit.blockMs,
    // A public route has no user: only its IP budget applies.
    skipIf: (context) =>
      rateLimitPolicyOf(context) !== spec.policy ||
      (spec.dimension === 'user' && !request(context).user),
    getTracker: (req) => trackers[spec.dimension](req as AuthenticatedRequest),
  };
}

@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG, SeckillScripts],
      useFactory: (config: AppConfig, scripts: SeckillScripts) => ({
        throttlers: throttlerSpecs(config.rateLimit).map((spec) => toThrottler(spec, config)),
        // The budget is per policy and tracker, not per route: the storage builds the key.
        generateKey: (_context, tracker) => tracker,
        // Only 429s carry a header (Retry-After); six X-RateLimit-* headers on every answer of
        // the hottest route buy the honest client nothing.
        setHeaders: false,
        storage: new RedisThrottlerStorage(scripts),
      }),
    }),
  ],
  providers: [RateLimitGuard],
  exports: [RateLimitGuard],
})
export class RateLimitModule {}
