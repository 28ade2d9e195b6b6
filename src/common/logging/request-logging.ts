import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PinoLogger } from 'nestjs-pino';
import { pino, type Level } from 'pino';
import { PINO_LEVEL, type LogLevelName } from './logging.js';

/** Fields that join a request's log lines once known (see EntryGuard). */
export interface RequestLogFields {
  userId: number;
  goodsId?: number;
}

type LoggedRequest = FastifyRequest & {
  logFields?: RequestLogFields;
  /** Its answer is counted and summed up elsewhere: its completion line is debug. */
  completionCounted?: true;
};

/**
 * The purchase route, whose expected answers (202, and the 409s of a crowd) are logged at debug:
 * at info they would be a line per purchase (see docs/logs.md). Its outcomes are counted in
 * seckill_purchases_total.
 */
const PURCHASE_PATH = /^\/api\/v1\/seckill\/[^/?]+(?:\?|$)/;

function completionLevel(request: FastifyRequest, status: number): Level {
  if ((request as LoggedRequest).completionCounted === true) return 'debug';
  if (status >= 500) return status === 503 ? 'warn' : 'error';
  // A throttled client is counted (seckill_throttled_total); a line each would let it flood logs.
  if (status === 429) return 'debug';
  if (request.method === 'POST' && PURCHASE_PATH.test(request.url)) return 'debug';
  return 'info';
}

/** The path without its query: a query string is the client's to fill, so it is not logged. */
export function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/**
 * Two hooks give every request its log context, as nestjs-pino's pino-http middleware would, for
 * a fraction of its cost:
 * - the first request hook echoes the request id (X-Request-Id) and, with LOG_REQUEST_CONTEXT,
 *   runs the rest of the request in a log context bound to it (`reqId`), so every line Nest's
 *   Logger writes while the request is handled carries it;
 * - the response hook writes one completion line (method, path, status, time, and the user and
 *   goods ids once known), at a level that depends on the answer; nothing is built when that
 *   level is off.
 */
export function installRequestLogging(
  fastify: FastifyInstance,
  context: PinoLogger,
  config: { level: LogLevelName; requestContext: boolean },
): void {
  const threshold = pino.levels.values[PINO_LEVEL[config.level]];
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.raw.setHeader('X-Request-Id', request.id);
    if (config.requestContext) context.runInContext(done, { bindings: { reqId: request.id } });
    else done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    const level = completionLevel(request, status);
    if (pino.levels.values[level] >= threshold) {
      PinoLogger.root[level](
        {
          reqId: request.id,
          ...(request as LoggedRequest).logFields,
          method: request.method,
          url: pathOf(request.url),
          statusCode: status,
          responseTime: Math.round(reply.elapsedTime),
        },
        'request completed',
      );
    }
    done();
  });
}

/**
 * An answer a crowd gets in bulk and that is counted and summed up elsewhere (a shed purchase:
 * seckill_purchases_shed_total and the load monitor's lines): its completion line is debug, so
 * that an overload does not also flood the logs.
 */
export function markCompletionCounted(request: FastifyRequest): void {
  (request as LoggedRequest).completionCounted = true;
}

/**
 * The request's verified user (and the goods its route names) join its completion line and, with
 * a log context, every line logged for it from here on.
 */
export function assignRequestLogFields(
  request: FastifyRequest,
  fields: RequestLogFields,
  context: PinoLogger | null,
): void {
  (request as LoggedRequest).logFields = fields;
  // Null without a log context (LOG_REQUEST_CONTEXT off): the completion line has them anyway.
  context?.assign(fields);
}
