import type { onRequestHookHandler } from 'fastify';
import { DomainError } from '../../common/errors/domain-error.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import type { SoldOutMemo } from './sold-out-memo.js';

/**
 * Answers a purchase of a goods known to be sold out before Nest sees the request: no guard,
 * pipe, rate-limit budget or Redis call is spent on the crowd that keeps clicking after the last
 * unit. It runs after the token hook, and only for a caller that hook let through, so an
 * anonymous or refused caller still gets its 401/403.
 */
export function answerSoldOutFromMemory(
  memo: SoldOutMemo,
  metrics: MetricsService,
): onRequestHookHandler {
  return (request, _reply, done) => {
    if (!memo.answersSoldOut(request)) return done();
    const { authentication } = request as { authentication?: { userId?: unknown } };
    if (typeof authentication?.userId !== 'number') return done();
    metrics.purchases.inc({ outcome: 'SOLD_OUT' });
    done(new DomainError('SOLD_OUT', 'Sold out'));
  };
}
