import { ExecutionContext, SetMetadata } from '@nestjs/common';
import type { ThrottleConfig } from '../../config/rate-limit.config.js';

/**
 * Which budget a route spends. Routes sharing a policy share one budget per tracker (reading
 * the goods and polling the result both count as "read"); a route without one is not limited.
 */
export type RateLimitPolicy = 'purchase' | 'token' | 'read';

/** Who a budget belongs to: the verified user, the client address, or everyone at once. */
export type RateLimitDimension = 'user' | 'ip' | 'global';

export const RATE_LIMIT_POLICY = 'seckill:rate-limit-policy';

export const RateLimit = (policy: RateLimitPolicy) => SetMetadata(RATE_LIMIT_POLICY, policy);

export function rateLimitPolicyOf(context: ExecutionContext): RateLimitPolicy | undefined {
  return (
    (Reflect.getMetadata(RATE_LIMIT_POLICY, context.getHandler()) as RateLimitPolicy | undefined) ??
    (Reflect.getMetadata(RATE_LIMIT_POLICY, context.getClass()) as RateLimitPolicy | undefined)
  );
}

export interface ThrottlerSpec {
  /** Also the throttler's name in @nestjs/throttler and part of its Redis keys. */
  name: string;
  policy: RateLimitPolicy;
  dimension: RateLimitDimension;
  limit: number;
}

/** The throttlers the configuration asks for; a limit of 0 (or THROTTLE_ENABLED=false) drops one. */
export function throttlerSpecs(config: ThrottleConfig): ThrottlerSpec[] {
  if (!config.enabled) return [];
  const all: ThrottlerSpec[] = [
    { name: 'purchase-user', policy: 'purchase', dimension: 'user', limit: config.purchaseUser },
    { name: 'purchase-ip', policy: 'purchase', dimension: 'ip', limit: config.purchaseIp },
    {
      name: 'purchase-global',
      policy: 'purchase',
      dimension: 'global',
      limit: config.purchaseGlobal,
    },
    { name: 'token-user', policy: 'token', dimension: 'user', limit: config.tokenUser },
    { name: 'token-ip', policy: 'token', dimension: 'ip', limit: config.tokenIp },
    { name: 'read-user', policy: 'read', dimension: 'user', limit: config.readUser },
    { name: 'read-ip', policy: 'read', dimension: 'ip', limit: config.readIp },
  ];
  return all.filter((spec) => spec.limit > 0);
}

/** One budget a request spends: a throttler's limits for one tracker. */
export interface RateLimitBudget {
  throttler: string;
  tracker: string;
  /** Window, ms. */
  ttl: number;
  limit: number;
  /** How long a tracker over the limit is refused, ms. */
  blockDuration: number;
}
