import type { FastifyInstance } from 'fastify';
import type { Histogram } from 'prom-client';
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
  // One child per series, looked up by a string: prom-client would otherwise hash the label
  // object on every answer, the sold-out crowd's included.
  const series = new Map<string, Histogram.Internal<'method' | 'route' | 'status'>>();
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let child = series.get(key);
    if (child === undefined) {
      child = metrics.httpDuration.labels({
        method: request.method,
        route,
        status: String(reply.statusCode),
      });
      series.set(key, child);
    }
    child.observe(reply.elapsedTime / 1_000);
    done();
  });
}
