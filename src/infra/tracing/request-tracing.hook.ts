import { SpanStatusCode } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { contextFrom, SpanKind, startSpan, withSpan } from './tracing.js';

/**
 * One server span per request, named by its route's pattern (ids never make span names), child
 * of the caller's `traceparent` when it sent one, and the active span while the request is
 * handled: the purchase's Redis scripts and its publish are its children. Ended when the answer
 * is written or the connection closes. Installed only when tracing is on.
 */
export function installRequestTracing(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const span = startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      parent: contextFrom(request.headers),
      attributes: { 'http.request.method': request.method, 'http.route': route },
    });
    if (span === undefined) return done();
    reply.raw.once('close', () => {
      const status = reply.raw.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    withSpan(span, done);
  });
}
