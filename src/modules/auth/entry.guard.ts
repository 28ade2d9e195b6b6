import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { RateLimitGuard } from '../rate-limit/rate-limit.guard.js';
import { AuthGuard } from './auth.guard.js';

/**
 * The one global guard, so that the order is fixed rather than left to module scan order:
 * authenticate first (the per-user budgets need the verified user id), then rate-limit, then
 * Nest runs the pipes and the handler.
 */
@Injectable()
export class EntryGuard implements CanActivate {
  constructor(
    private readonly auth: AuthGuard,
    private readonly rateLimit: RateLimitGuard,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    return this.auth.canActivate(context) && this.rateLimit.canActivate(context);
  }
}
