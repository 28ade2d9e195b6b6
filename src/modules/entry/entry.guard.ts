import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import { assignRequestLogFields } from '../../common/logging/request-logging.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { loggingConfig, type LoggingConfig } from '../../config/logging.config.js';
import { RateLimitGuard } from '../rate-limit/rate-limit.guard.js';
import type { AuthenticatedRequest } from '../auth/auth.decorators.js';
import { AuthGuard } from '../auth/auth.guard.js';

/** A goods id as it may appear in a path, before the pipe has checked it. */
const GOODS_ID = /^[1-9][0-9]{0,15}$/;

/**
 * The one global guard, so that the order is fixed rather than left to module scan order:
 * authenticate first (the per-user budgets need the verified user id), then rate-limit, then
 * Nest runs the pipes and the handler. Between the two, the verified user id (and the route's
 * goods id) join the request's log context: every line logged for the request carries them.
 */
@Injectable()
export class EntryGuard implements CanActivate {
  constructor(
    private readonly auth: AuthGuard,
    private readonly rateLimit: RateLimitGuard,
    private readonly log: PinoLogger,
    @InjectConfig(loggingConfig) private readonly logging: LoggingConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (!this.auth.canActivate(context)) return false;
    this.assignLogFields(context.switchToHttp().getRequest<AuthenticatedRequest>());
    return this.rateLimit.canActivate(context);
  }

  private assignLogFields(request: AuthenticatedRequest): void {
    if (!request.user) return;
    const goodsId = (request.params as Record<string, string> | undefined)?.goodsId;
    assignRequestLogFields(
      request,
      goodsId !== undefined && GOODS_ID.test(goodsId)
        ? { userId: request.user.userId, goodsId: Number(goodsId) }
        : { userId: request.user.userId },
      this.logging.requestContext ? this.log : null,
    );
  }
}
