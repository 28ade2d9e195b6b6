import type { onRequestHookHandler } from 'fastify';
import { bodyStillComing } from '../../common/http/body-coming.js';
import { earlyUserId } from '../../common/http/early-user.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import type { SoldOutMemoStore } from './sold-out-memo.store.js';

/**
 * Answers a purchase of a goods known to be sold out before Nest sees the request: no guard,
 * pipe, rate-limit budget or Redis call is spent on the crowd that keeps clicking after the last
 * unit. It runs after the token hook, and only for a caller that hook let through, so an
 * anonymous or refused caller still gets its 401/403.
 */
/** The contract's body, serialised once: this answer is the one a crowd gets most. */
const SOLD_OUT_BODY = JSON.stringify({ statusCode: 409, code: 'SOLD_OUT', message: 'Sold out' });

export function answerSoldOutFromMemory(
  memo: SoldOutMemoStore,
  metrics: MetricsService,
): onRequestHookHandler {
  return (request, reply, done) => {
    const goodsId = memo.answersSoldOut(request);
    if (goodsId === 0) return done();
    if (earlyUserId(request) === undefined) return done();
    metrics.countPurchase(goodsId, 'SOLD_OUT');
    // Answered here rather than thrown to the exception filter (which answers the same body):
    // no error object, no filter, no serialisation. As the filter does, a body still on its way
    // is not read but the connection closed.
    if (bodyStillComing(request.raw)) void reply.header('Connection', 'close');
    void reply.code(409).type('application/json; charset=utf-8').send(SOLD_OUT_BODY);
  };
}
