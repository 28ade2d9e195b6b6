import { SpanStatusCode } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { startServerSpan, type Trace } from './tracing.js';

const TRACE = Symbol('trace');

type TracedRequest = FastifyRequest & { [TRACE]?: Trace };

/**
 * One server span per request, named by its route's pattern (ids never make span names), child
 * of the caller's `traceparent` when it sent one. Its trace rides on the request for the handler
 * to hand down (`@RequestTrace()`): the purchase's deduct script and its publish are its children.
 * Ended when the answer is written or the connection closes. Installed only when tracing is on.
 */
export function installRequestTracing(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const started = startServerSpan(`${request.method} ${route}`, request.headers, {
      'http.request.method': request.method,
      'http.route': route,
    });
    if (started === undefined) return done();
    const { span } = started;
    (request as TracedRequest)[TRACE] = started.trace;
    reply.raw.once('close', () => {
      const status = reply.raw.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    done();
  });
}

/** The request's trace (its server span), undefined when it is not traced. */
export function requestTrace(request: FastifyRequest): Trace {
  return (request as TracedRequest)[TRACE];
}
