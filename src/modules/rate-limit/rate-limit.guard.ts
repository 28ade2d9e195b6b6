import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerLimitDetail,
  type ThrottlerModuleOptions,
  type ThrottlerRequest,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import { DomainError } from '../../common/errors/domain-error.js';
import { MetricsService } from '../metrics/metrics.service.js';

/**
 * @nestjs/throttler's guard, answering in the contract's terms: 429 TOO_MANY_REQUESTS with
 * `Retry-After` (the exception filter turns `retryAfterSeconds` into the header). It runs
 * after authentication (see EntryGuard) and before any pipe or handler, so a throttled
 * request never reaches the stock, the purchase lock or a Lua script.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly metrics: MetricsService,
  ) {
    super(options, storage, reflector);
  }

  protected override async handleRequest(request: ThrottlerRequest): Promise<boolean> {
    try {
      return await super.handleRequest(request);
    } catch (error) {
      if (error instanceof DomainError && error.code === 'TOO_MANY_REQUESTS') {
        this.metrics.throttled.inc({ throttler: request.throttler.name ?? 'default' });
      }
      throw error;
    }
  }

  protected override throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw new DomainError('TOO_MANY_REQUESTS', 'Too many requests; retry after Retry-After', {
      retryAfterSeconds: Math.max(1, detail.timeToBlockExpire),
    });
  }
}
