import { Logger, RequestMethod } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AppModule } from './app.module.js';
import { AllExceptionsFilter } from './common/filters/all-exceptions.filter.js';
import { installClientAddress, trustedProxies } from './common/http/client-address.js';
import { answerClientError, answerRouterError } from './common/http/edge-answers.js';
import { parseJsonBody } from './common/http/json-body.js';
import { applyRouteBodyLimits, type EdgeRouteConfig } from './common/http/route-config.js';
import { setSecurityHeaders } from './common/http/security-headers.js';
import { PARAMS_PROVIDER_TOKEN, PinoLogger, Logger as PinoNestLogger } from 'nestjs-pino';
import { logDestination, requestIdFor } from './common/logging/logging.js';
import { installRequestLogging } from './common/logging/request-logging.js';
import { validateEnv, type AppConfig } from './config/env.validation.js';
import { installRequestTracing } from './infra/tracing/request-tracing.hook.js';
import { refuseBlocked } from './modules/blocklist/blocklist.hook.js';
import { BlocklistService } from './modules/blocklist/blocklist.service.js';
import { AuthenticatorService } from './modules/auth/authenticator.service.js';
import { authenticateBeforeBody } from './modules/auth/early-auth.hook.js';
import { BUYER_PAGE_PATH } from './modules/buyer-page/buyer-page.controller.js';
import { MetricsService } from './modules/metrics/metrics.service.js';
import { installRequestMetrics } from './modules/metrics/request-metrics.hook.js';
import { LoadMonitorService } from './modules/overload/load-monitor.service.js';
import { shedWhenOverloaded } from './modules/overload/shed-overload.hook.js';
import { SoldOutMemoStore } from './modules/sale-store/sold-out-memo.store.js';
import { answerSoldOutFromMemory } from './modules/sale-store/sold-out.hook.js';

export const API_PREFIX = 'api/v1';

/**
 * Builds the HTTP app exactly as production runs it; main.ts and the e2e tests both use this.
 * Fastify, because on this box Nest on Express serves a quarter of Fastify's requests per second.
 */
export async function createApp(env: NodeJS.ProcessEnv = process.env) {
  const config = validateEnv(env);
  const { http } = config;
  const trusted = http.trustedProxies.length > 0 ? trustedProxies(http.trustedProxies) : null;
  const adapter = new FastifyAdapter({
    bodyLimit: http.bodyLimitBytes,
    // Long path parameters must reach the handlers, which answer them with contract errors.
    routerOptions: { maxParamLength: 4_096 },
    // X-Forwarded-* is believed only from these hops; anyone else's header is ignored. The
    // client address itself is resolved by installClientAddress, with the same trust.
    trustProxy: trusted ?? false,
    // Refusals given before any hook runs: in the contract's shape, with the security headers.
    frameworkErrors: answerRouterError,
    clientErrorHandler: answerClientError,
    // A request trickling in holds a connection and its buffered body; past this it is 408.
    requestTimeout: http.requestTimeoutMs,
    // The caller's X-Request-Id when sane, else a UUID; the logs' `reqId`, echoed back below.
    genReqId: requestIdFor,
    http: {
      requestTimeout: http.requestTimeoutMs,
      headersTimeout: http.requestTimeoutMs,
      // Node only looks for expired requests this often (30 s by default, which would triple a
      // 10 s timeout).
      connectionsCheckingInterval: timeoutCheckInterval(http.requestTimeoutMs),
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(config, await logDestination(config.logging.format)),
    adapter,
    {
      // Our own JSON parser below replaces Nest's (it accepts an empty body).
      bodyParser: false,
      // Held until pino takes over below, so that the boot's lines are JSON in production too.
      bufferLogs: true,
    },
  );
  app.useLogger(app.get(PinoNestLogger));
  configureApp(app, config, trusted);
  const drain = keepAliveDrain(app);
  if (config.auth.jwtSecretIsDefault) {
    new Logger('Bootstrap').warn(
      'JWT_SECRET is not set: using the public development secret. Anyone can forge tokens. Set JWT_SECRET before going live.',
    );
  }
  return { app, config, beginDrain: drain };
}

function timeoutCheckInterval(requestTimeoutMs: number): number {
  return Math.min(1_000, Math.max(25, Math.floor(requestTimeoutMs / 10)));
}

/**
 * Keep-alive connections that are busy when the server starts closing would otherwise stay open
 * (idle) after their last response and hold the close up until they time out. Once draining,
 * every response says `Connection: close`.
 */
function keepAliveDrain(app: NestFastifyApplication): () => void {
  let draining = false;
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onSend', async (_request, reply) => {
      if (draining) void reply.header('Connection', 'close');
    });
  return () => {
    draining = true;
  };
}

function configureApp(
  app: NestFastifyApplication,
  config: AppConfig,
  trusted: ((address: string) => boolean) | null,
): void {
  const fastify = app.getHttpAdapter().getInstance();
  // First, so that the request's span covers every hook after it (only when tracing is on).
  if (config.tracing.endpoint !== null) installRequestTracing(fastify);
  // Then, so that every hook after it logs in the request's context.
  installRequestLogging(fastify, new PinoLogger(app.get(PARAMS_PROVIDER_TOKEN)), config.logging);
  installRequestMetrics(fastify, app.get(MetricsService));
  // Before any hook that asks who the client is (the blocklist; the rate limits after them).
  installClientAddress(fastify, trusted);
  fastify.addHook('onRequest', (_request, reply, done) => {
    // On the Node response, so that answers written to it directly (streams) carry them too.
    setSecurityHeaders(reply.raw);
    done();
  });
  // After the headers hook, so that its refusals carry them.
  fastify.addHook('onRequest', authenticateBeforeBody(app.get(AuthenticatorService)));
  // After the token hook (the user is known) and before the sold-out memo: a blocked client is
  // refused before anything else is done for it.
  fastify.addHook('onRequest', refuseBlocked(app.get(BlocklistService), app.get(MetricsService)));
  fastify.addHook(
    'onRequest',
    answerSoldOutFromMemory(app.get(SoldOutMemoStore), app.get(MetricsService)),
  );
  // Last of the early answers: a purchase is shed before Nest queues it anywhere, but a caller
  // the hooks above answer for good (401, 403, 409) is told that rather than to come back.
  fastify.addHook('onRequest', shedWhenOverloaded(app.get(LoadMonitorService)));
  applyRouteBodyLimits(fastify, config.http.bodyLimitBytes);
  if (config.http.corsOrigins.length > 0) {
    // Only listed origins may call from a browser; without the list no CORS header is sent and
    // browsers refuse cross-origin calls.
    app.enableCors({
      origin: config.http.corsOrigins,
      methods: ['GET', 'POST'],
      allowedHeaders: [
        'Authorization',
        'Content-Type',
        'Idempotency-Key',
        'X-Seckill-Token',
        'X-Request-Id',
      ],
      exposedHeaders: ['Retry-After', 'X-Request-Id', 'X-Next-Cursor'],
      maxAge: 600,
    });
  }
  app.setGlobalPrefix(API_PREFIX, {
    exclude: [
      { path: 'health/live', method: RequestMethod.GET },
      { path: 'health/ready', method: RequestMethod.GET },
      { path: 'metrics', method: RequestMethod.GET },
      { path: BUYER_PAGE_PATH, method: RequestMethod.GET },
    ],
  });
  app.useGlobalFilters(new AllExceptionsFilter());

  fastify.addContentTypeParser(
    'application/json',
    { parseAs: 'string' },
    (
      request: FastifyRequest,
      body: string | Buffer,
      done: (error: Error | null, value?: unknown) => void,
    ) => {
      try {
        const text = body.toString();
        const { rawBody } = (request.routeOptions.config ?? {}) as EdgeRouteConfig;
        done(null, rawBody ? text : parseJsonBody(text));
      } catch (error) {
        done(error as Error);
      }
    },
  );

  if (config.http.swaggerEnabled) {
    const document = SwaggerModule.createDocument(
      app,
      new DocumentBuilder()
        .setTitle('Flash-sale (seckill) API')
        .setDescription(
          'Errors are `{statusCode, code, message}`. Get a token with `npm run token -- --user 42 [--admin]`.',
        )
        .setVersion('1')
        .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
        .build(),
    );
    SwaggerModule.setup('docs', app, document);
  }
}
