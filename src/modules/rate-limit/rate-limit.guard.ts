import { CanActivate, ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { InjectThrottlerStorage } from '@nestjs/throttler';
import { DomainError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { rateLimitConfig, type RateLimitConfig } from '../../config/rate-limit.config.js';
import { autobanCounterKey } from '../../infra/redis/seckill-keys.js';
import type { AuthenticatedRequest } from '../auth/auth.decorators.js';
import { BlocklistService } from '../blocklist/blocklist.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  rateLimitPolicyOf,
  throttlerSpecs,
  type RateLimitBudget,
  type RateLimitPolicy,
  type ThrottlerSpec,
} from './rate-limit.policy.js';
import type { RedisThrottlerStorage } from './redis-throttler.storage.js';
import { ThrottleScripts } from './throttle.scripts.js';

/**
 * `clientAddress` is the peer, or the client named in X-Forwarded-For only when the peer is in
 * TRUSTED_PROXIES, resolved once in canonical form (client-address.ts): any spelling of an
 * address (a port, brackets, a mapped IPv6 form) is the one budget, and an IPv6 client is limited
 * by its /64, which it usually owns whole. A trusted proxy's own request has no IP budget (see
 * `canActivate`).
 */
const trackers = {
  user: (req: AuthenticatedRequest) => `u:${req.user!.userId}`,
  ip: (req: AuthenticatedRequest) => `ip:${req.clientAddress}`,
  global: () => 'all',
};

/**
 * Spends a request's rate-limit budgets (the route's policy: per user, per client IP, and the
 * global ceiling when set) in one call to the @nestjs/throttler storage, where ThrottlerGuard
 * would make one Redis round trip per budget, one after the other. The budgets are checked in
 * the same order and with the same effect: the first refusal ends the walk. A refusal is the
 * contract's 429 TOO_MANY_REQUESTS with `Retry-After` (the exception filter turns
 * `retryAfterSeconds` into the header). It runs after authentication (see EntryGuard) and before
 * any pipe or handler, so a throttled request never reaches the stock, the purchase lock or a
 * Lua script.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly logger = new Logger(RateLimitGuard.name);
  private readonly specsByPolicy = new Map<RateLimitPolicy, ThrottlerSpec[]>();
  /** A handler's policy never changes: read its metadata once. */
  private readonly policyOfHandler = new WeakMap<object, RateLimitPolicy | null>();

  constructor(
    @InjectThrottlerStorage() private readonly storage: RedisThrottlerStorage,
    private readonly metrics: MetricsService,
    private readonly scripts: ThrottleScripts,
    private readonly blocklist: BlocklistService,
    @InjectConfig(rateLimitConfig) private readonly rateLimit: RateLimitConfig,
  ) {
    for (const spec of throttlerSpecs(rateLimit.throttle)) {
      const specs = this.specsByPolicy.get(spec.policy) ?? [];
      specs.push(spec);
      this.specsByPolicy.set(spec.policy, specs);
    }
  }

  // Only a 429 carries a header (Retry-After): X-RateLimit-* headers on every answer of the
  // hottest route would buy the honest client nothing.
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const policy = this.policyOf(context);
    const specs = policy && this.specsByPolicy.get(policy);
    if (!specs) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const budgets: (RateLimitBudget & { spec: ThrottlerSpec })[] = [];
    for (const spec of specs) {
      // A public route has no user: only its IP budget applies.
      if (spec.dimension === 'user' && !request.user) continue;
      // A trusted proxy's own request (no client named) is limited per user only: on the
      // proxy's address it would share one budget, and one autoban, with every buyer behind it.
      if (spec.dimension === 'ip' && request.clientIsTrustedProxy) continue;
      budgets.push({
        spec,
        throttler: spec.name,
        tracker: trackers[spec.dimension](request),
        ttl: this.rateLimit.throttle.windowMs,
        limit: spec.limit,
        blockDuration: this.rateLimit.throttle.blockMs,
      });
    }
    const refusal = await this.storage.spend(budgets);
    if (!refusal) return true;
    this.metrics.throttled.inc({ throttler: refusal.throttler });
    const refusedBy = budgets.find((budget) => budget.throttler === refusal.throttler);
    // Counted in Redis, which has just failed if the refusal was counted in memory.
    if (refusedBy && !refusal.local)
      void this.countTowardsAutoban(refusedBy.spec, refusedBy.tracker);
    // What the crowd of a sale is told, on the dashboard: its purchases refused here count too.
    if (policy === 'purchase') {
      const goodsId = Number((request.params as Record<string, string> | undefined)?.goodsId);
      if (Number.isSafeInteger(goodsId) && goodsId > 0) {
        this.metrics.purchaseTally.add(goodsId, 'TOO_MANY_REQUESTS');
      }
    }
    throw new DomainError('TOO_MANY_REQUESTS', 'Too many requests; retry after Retry-After', {
      retryAfterSeconds: refusal.retryAfterSeconds,
    });
  }

  /**
   * A client throttled more than AUTOBAN_THRESHOLD times within the window is blocklisted for
   * AUTOBAN_SECONDS, on every instance: the count is shared in Redis. It costs a call only on a
   * request already refused, never on one let through; a failure costs the count, not the 429.
   */
  private async countTowardsAutoban(spec: ThrottlerSpec, tracker: string): Promise<void> {
    const { threshold, windowMs, banSeconds } = this.rateLimit.autoban;
    if (threshold === 0 || spec.dimension === 'global') return;
    const type = spec.dimension === 'user' ? 'user' : 'ip';
    const value = tracker.slice(tracker.indexOf(':') + 1);
    try {
      const count = await this.scripts.autobanCount(
        autobanCounterKey(`${type}:${value}`),
        windowMs,
      );
      // Exactly once per window, by whichever instance counted the one over the threshold.
      if (count !== threshold + 1) return;
      await this.blocklist.add({
        type,
        value,
        ttlSeconds: banSeconds,
        reason: `autoban: throttled ${count} times within ${windowMs / 1000} s`,
      });
      this.metrics.autobans.inc({ type });
    } catch (error) {
      // A refused entry (an address overlapping TRUSTED_PROXIES) was logged where it was refused.
      if (error instanceof DomainError && error.code === 'VALIDATION_FAILED') return;
      this.logger.warn(`autoban count failed: ${type}=${value} ${(error as Error).message}`);
    }
  }

  private policyOf(context: ExecutionContext): RateLimitPolicy | null {
    const handler = context.getHandler();
    let policy = this.policyOfHandler.get(handler);
    if (policy === undefined) {
      policy = rateLimitPolicyOf(context) ?? null;
      this.policyOfHandler.set(handler, policy);
    }
    return policy;
  }
}
