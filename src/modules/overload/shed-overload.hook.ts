import type { onRequestHookHandler } from 'fastify';
import { bodyStillComing } from '../../common/http/body-coming.js';
import { earlyUserId } from '../../common/http/early-user.js';
import { edgeRouteConfig, type EdgeRouteConfig } from '../../common/http/route-config.js';
import { markCompletionCounted } from '../../common/logging/request-logging.js';
import type { LoadMonitorService } from './load-monitor.service.js';

/** Marks a route whose requests are shed when the instance is past what it can answer in time. */
export const Sheddable = () => edgeRouteConfig({ sheddable: true });

/** The contract's body, serialised once: under overload this is most of what is answered. */
const OVERLOADED_BODY = JSON.stringify({
  statusCode: 503,
  code: 'OVERLOADED',
  message: 'The shop is past what it can answer in time; nothing was taken: try again shortly',
});

/**
 * A buyer back before their Retry-After: the same contract answer, told why (its Retry-After is
 * the time left of the first, rounded up, not a new wait).
 */
export const RETRY_EARLY_MESSAGE =
  'You came back before the Retry-After you were given; nothing was taken: try again after it';
const RETRY_EARLY_BODY = JSON.stringify({
  statusCode: 503,
  code: 'OVERLOADED',
  message: RETRY_EARLY_MESSAGE,
});

/**
 * Sheds a purchase at once (503 OVERLOADED with Retry-After; nothing taken) when the instance's
 * own measures say it is behind (LoadMonitorService), before it queues anywhere inside the
 * process: no guard, pipe, rate-limit budget, lock or store call is spent on it. A purchase that
 * is taken is counted in progress until its answer is written or its connection closes. It runs
 * after the token, blocklist and sold-out hooks: a caller they refuse gets their final answer
 * (401, 403, 409), which no retry would change, rather than a 503. A buyer (known by the token)
 * who comes back before the Retry-After given is shed again with the time left.
 */
export function shedWhenOverloaded(monitor: LoadMonitorService): onRequestHookHandler {
  return (request, reply, done) => {
    if ((request.routeOptions.config as EdgeRouteConfig).sheddable !== true) return done();
    const userId = earlyUserId(request);
    const reason = monitor.admit(userId);
    if (reason === null) {
      // 'close' comes once, whether the answer was written or the client went away first. Its
      // latency is timed only where a latency target measures the bound (no closure otherwise).
      if (monitor.measuresLatency) {
        const startedAt = performance.now();
        reply.raw.once('close', () => monitor.leave(startedAt));
      } else {
        reply.raw.once('close', monitor.leave);
      }
      return done();
    }
    const retryAfter = monitor.shed(reason, userId);
    markCompletionCounted(request);
    if (bodyStillComing(request.raw)) void reply.header('Connection', 'close');
    void reply
      .code(503)
      .header('Retry-After', String(retryAfter))
      .type('application/json; charset=utf-8')
      .send(reason === 'retry_early' ? RETRY_EARLY_BODY : OVERLOADED_BODY);
  };
}
