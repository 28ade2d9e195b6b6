import type { FastifyInstance } from 'fastify';
import type { MetricsService } from './metrics.service.js';

/** A request no route matched: its raw path would make a series per path anyone cares to send. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Times every answer, by method, route pattern (`/api/v1/seckill/:goodsId`, never the path with
 * its ids) and status, into `seckill_http_request_duration_seconds`: the latency and availability
 * SLIs stand on it. On `onResponse`, so that the answers given by hooks (the sold-out memo, the
 * blocklist, the token's refusals) and by the exception filter are timed as the routes' are;
 * Fastify's own clock, from the request's arrival to the last byte handed to the socket.
 */
export function installRequestMetrics(fastify: FastifyInstance, metrics: MetricsService): void {
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.httpDuration.observe(
      request.method,
      request.routeOptions.url ?? UNMATCHED_ROUTE,
      reply.statusCode,
      reply.elapsedTime / 1_000,
    );
    done();
  });
}
