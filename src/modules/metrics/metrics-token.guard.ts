import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { authConfig, type AuthConfig } from '../../config/auth.config.js';
import { bearerCredentials, secretMatches } from '../auth/bearer.js';

/**
 * With METRICS_TOKEN set, /metrics answers only a scraper that presents it as a bearer token: the
 * figures tell an outsider the sales, their stock and the queue depths.
 */
@Injectable()
export class MetricsTokenGuard implements CanActivate {
  constructor(@InjectConfig(authConfig) private readonly auth: AuthConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const expected = this.auth.metricsToken;
    if (expected === null) return true;
    const { authorization } = context.switchToHttp().getRequest<FastifyRequest>().headers;
    if (!secretMatches(bearerCredentials(authorization), expected)) {
      throw new DomainError('UNAUTHORIZED', 'The metrics token is missing or wrong');
    }
    return true;
  }
}
