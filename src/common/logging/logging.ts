import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostname } from 'node:os';
import type { Params } from 'nestjs-pino';
import { pino, type DestinationStream, type Level, type LoggerOptions } from 'pino';

/**
 * The app's logs: pino through nestjs-pino (Nest's Logger writes to it). JSON lines in
 * production, pino-pretty in development; every line logged while a request is handled carries
 * its `reqId` (and, once the bearer token is verified, `userId` and the route's `goodsId`: see
 * request-logging.ts). Nothing logs headers, bodies or query strings, so no token or secret
 * reaches a line.
 */

/** Nest's level names, as LOG_LEVEL has always taken them, plus pino's own. */
export const LOG_LEVELS = ['error', 'warn', 'log', 'info', 'debug', 'verbose', 'trace'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export const PINO_LEVEL: Record<LogLevelName, Level> = {
  error: 'error',
  warn: 'warn',
  log: 'info',
  info: 'info',
  debug: 'debug',
  verbose: 'trace',
  trace: 'trace',
};

export const REQUEST_ID_HEADER = 'x-request-id';
/** An incoming X-Request-Id is reused only if it is this plain and short; else one is made. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:=+/-]{1,128}$/;

/**
 * The request's id (Fastify's `genReqId`, so `request.id`): the caller's X-Request-Id when sane,
 * else a new UUID. A request hook echoes it back (see request-logging.ts).
 */
export function requestIdFor(request: IncomingMessage): string {
  const incoming = request.headers[REQUEST_ID_HEADER];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Secrets a request may carry, censored should anything ever log headers after all. */
const REDACTED_HEADERS = [
  'authorization',
  'cookie',
  '"set-cookie"',
  '"x-seckill-token"',
  '"x-seckill-challenge"',
  '"idempotency-key"',
];

export function pinoOptions(level: LogLevelName, role: string): LoggerOptions {
  return {
    level: PINO_LEVEL[level],
    base: { pid: process.pid, hostname: hostname(), role },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: REDACTED_HEADERS.flatMap((name) => [
        `headers.${name}`,
        `req.headers.${name}`,
        `res.headers.${name}`,
      ]),
      censor: '[redacted]',
    },
  };
}

/**
 * A stream for pino-pretty when the format asks for it and the package is installed (a dev
 * dependency: an image built with --omit=dev runs in production, which logs JSON anyway).
 */
export async function logDestination(format: LogFormat): Promise<DestinationStream | undefined> {
  if (format !== 'pretty') return undefined;
  try {
    const { default: pretty } = await import('pino-pretty');
    return pretty({
      sync: true,
      colorize: process.stdout.isTTY,
      ignore: 'pid,hostname,role',
      translateTime: 'SYS:HH:MM:ss.l',
      singleLine: true,
    });
  } catch {
    return undefined;
  }
}

/**
 * LoggerModule's parameters. The pino options go through its `pinoHttp` slot, which builds the
 * root logger, but its request middleware is not mounted (`forRoutes: []`): pino-http through
 * Nest's middleware runner cost about 25 µs of CPU per request here, a third of a sold-out
 * answer's. The request context and the completion line come from two Fastify hooks instead
 * (request-logging.ts).
 */
export function loggerParams(
  level: LogLevelName,
  role: string,
  destination?: DestinationStream,
): Params {
  const options = pinoOptions(level, role);
  return { pinoHttp: destination ? [options, destination] : options, forRoutes: [] };
}

/** For the lines logged before the app's configuration is known (a bad one, say). */
export async function bootLogger(env: NodeJS.ProcessEnv) {
  const explicit = env.LOG_FORMAT?.trim();
  const format: LogFormat =
    explicit === 'json' || explicit === 'pretty'
      ? explicit
      : env.NODE_ENV?.trim() === 'production'
        ? 'json'
        : 'pretty';
  const options = pinoOptions('log', env.APP_ROLE ?? '');
  const destination = await logDestination(format);
  return destination ? pino(options, destination) : pino(options);
}
