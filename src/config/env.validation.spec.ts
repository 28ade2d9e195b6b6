import { describe, expect, it } from 'vitest';
import { DEV_JWT_SECRET } from './auth.config.js';
import { ConfigValidationError } from './config-validation.error.js';
import { validateEnv } from './env.validation.js';

/** Runs validateEnv and returns what it threw, failing the test when it threw nothing. */
function refusal(env: Record<string, string>): Error {
  try {
    validateEnv(env);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`validateEnv accepted ${JSON.stringify(env)}`);
}

describe('validateEnv', () => {
  it('should apply the contract defaults to an empty environment', () => {
    const config = validateEnv({});

    expect(config).toMatchObject({
      app: { nodeEnv: 'development', role: 'all' },
      http: { port: 3000, trustedProxies: [], requestTimeoutMs: 10_000 },
      database: { url: 'mysql://root:@127.0.0.1:3306/seckill' },
      redis: { url: 'redis://127.0.0.1:6379/0' },
      rabbitmq: { urls: ['amqp://guest:guest@127.0.0.1:5672/'] },
      seckill: { orderPaymentTimeoutMs: 900_000 },
      auth: { jwtSecret: DEV_JWT_SECRET, jwtSecretIsDefault: true },
    });
  });

  it('should treat blank values as unset', () => {
    const config = validateEnv({ PORT: '  ', REDIS_URL: '', TRUSTED_PROXIES: ' ' });

    expect(config.http.port).toBe(3000);
    expect(config.redis.url).toBe('redis://127.0.0.1:6379/0');
    expect(config.http.trustedProxies).toEqual([]);
  });

  it('should read the values it is given', () => {
    const config = validateEnv({
      PORT: '8080',
      DATABASE_URL: 'mariadb://app:pw@db:3306/shop',
      REDIS_URL: 'rediss://cache:6380/2',
      RABBITMQ_URL: 'amqps://user:pw@mq:5671/',
      ORDER_PAYMENT_TIMEOUT_MS: '60000',
      JWT_SECRET: 'a-real-secret',
      PREHEAT_CRON_ENABLED: 'off',
      LOG_LEVEL: 'debug',
    });

    expect(config).toMatchObject({
      http: { port: 8080 },
      database: { url: 'mariadb://app:pw@db:3306/shop' },
      redis: { url: 'rediss://cache:6380/2' },
      rabbitmq: { urls: ['amqps://user:pw@mq:5671/'], quorumSize: null },
      seckill: { orderPaymentTimeoutMs: 60_000 },
      auth: { jwtSecret: 'a-real-secret', jwtSecretIsDefault: false },
      jobs: { preheat: { enabled: false } },
      logging: { level: 'debug' },
    });
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'postgres://x'],
    ['REDIS_URL', 'not a url'],
    ['RABBITMQ_URL', 'http://mq:5672/'],
    ['RABBITMQ_URL', 'amqp://mq-1:5672/,http://mq-2:5672/'],
    ['RABBITMQ_URL', ' , '],
    ['RABBITMQ_QUORUM_SIZE', '0'],
    ['DATABASE_REPLICA_URL', 'redis://replica:6379/'],
    ['DATABASE_REPLICA_MAX_LAG_MS', '50'],
    ['PREHEAT_CRON_ENABLED', 'maybe'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_FORMAT', 'xml'],
    ['LOG_REQUEST_CONTEXT', 'sometimes'],
    ['PREHEAT_CRON', 'every ten seconds'],
    ['PREHEAT_CRON', '*/10 * * * * * *'],
    ['PREHEAT_CRON', '61 * * * *'],
    ['PREHEAT_INTERVAL_MS', '30000'],
    ['ORDER_PAYMENT_TIMEOUT_MS', '10'],
    ['RABBITMQ_PREFIX', 'bad prefix!'],
    ['REQUEST_TIMEOUT_MS', '50'],
    ['REQUEST_TIMEOUT_MS', 'ten seconds'],
    ['APP_ROLE', 'both'],
    ['APP_ROLE', 'API'],
  ])('should refuse %s=%j with an error naming the variable', (name, value) => {
    const error = refusal({ [name]: value });

    expect(error).toBeInstanceOf(ConfigValidationError);
    expect(error.message).toContain(name);
  });

  it("should read RABBITMQ_URL's nodes of one cluster and the quorum queues' replicas", () => {
    const config = validateEnv({
      RABBITMQ_URL: 'amqp://u:p@mq-1:5672/shop, amqp://u:p@mq-2:5672/shop,',
      RABBITMQ_QUORUM_SIZE: '3',
    });
    expect(config.rabbitmq).toMatchObject({
      urls: ['amqp://u:p@mq-1:5672/shop', 'amqp://u:p@mq-2:5672/shop'],
      quorumSize: 3,
    });
    expect(refusal({ RABBITMQ_URL: 'amqp://mq-1/,ftp://mq-2/' }).message).toContain('entry 2 of 2');
  });

  it('should read no replica unless DATABASE_REPLICA_URL names one, and its lag bound', () => {
    expect(validateEnv({}).database.replica).toBeNull();
    expect(
      validateEnv({
        DATABASE_REPLICA_URL: 'mysql://reader:pw@db-replica:3306/shop',
        DATABASE_REPLICA_MAX_LAG_MS: '5000',
      }).database.replica,
    ).toEqual({ url: 'mysql://reader:pw@db-replica:3306/shop', maxLagMs: 5_000 });
    expect(
      validateEnv({ DATABASE_REPLICA_URL: 'mariadb://db-replica/shop' }).database.replica,
    ).toMatchObject({ maxLagMs: 2_000 });
  });

  it('should log JSON lines in production and pretty ones elsewhere, unless LOG_FORMAT says', () => {
    expect(validateEnv({ NODE_ENV: 'production', JWT_SECRET: 'real' }).logging.format).toBe('json');
    expect(validateEnv({}).logging.format).toBe('pretty');
    expect(validateEnv({ LOG_FORMAT: 'json' }).logging.format).toBe('json');
  });

  it('should preheat every 10 seconds unless PREHEAT_CRON says when', () => {
    expect(validateEnv({}).jobs.preheat.cron).toBe('*/10 * * * * *');
    expect(validateEnv({ PREHEAT_CRON: ' 0 */5 * * * * ' }).jobs.preheat.cron).toBe(
      '0 */5 * * * *',
    );
    expect(validateEnv({ PREHEAT_CRON: '*/2 * * * *' }).jobs.preheat.cron).toBe('*/2 * * * *');
  });

  it('should point PREHEAT_INTERVAL_MS, which it no longer reads, to PREHEAT_CRON', () => {
    expect(refusal({ PREHEAT_INTERVAL_MS: '30000' }).message).toContain('PREHEAT_CRON');
  });

  it.each(['all', 'api', 'worker'])('should read APP_ROLE=%s', (role) => {
    expect(validateEnv({ APP_ROLE: ` ${role} ` }).app.role).toBe(role);
  });

  it('should list the roles it accepts when APP_ROLE is not one of them', () => {
    expect(refusal({ APP_ROLE: 'consumer' }).message).toBe(
      'APP_ROLE must be one of all, api, worker, got "consumer"',
    );
  });

  it('should sell through MySQL while Redis is down unless REDIS_DOWN_MODE=closed', () => {
    expect(validateEnv({}).availability.redisDownMode).toBe('database');
    expect(validateEnv({ REDIS_DOWN_MODE: 'closed' }).availability.redisDownMode).toBe('closed');
    expect(refusal({ REDIS_DOWN_MODE: 'open' }).message).toBe(
      'REDIS_DOWN_MODE must be one of database, closed, got "open"',
    );
  });

  it('should bound the database-mode purchases at once by FALLBACK_MAX_INFLIGHT', () => {
    expect(validateEnv({}).availability.fallbackMaxInflight).toBe(32);
    expect(validateEnv({ FALLBACK_MAX_INFLIGHT: '4' }).availability.fallbackMaxInflight).toBe(4);
    expect(refusal({ FALLBACK_MAX_INFLIGHT: '0' }).message).toContain('FALLBACK_MAX_INFLIGHT');
  });

  it('should read the overload bounds, 0 turning one off', () => {
    expect(validateEnv({}).overload).toEqual({
      maxInFlight: 1_024,
      latencyTargetMs: 0,
      maxEventLoopDelayMs: 0,
      maxConfirmWaitMs: 1_000,
      retryAfterSeconds: 1,
      retryAfterMaxSeconds: 30,
      retryShare: 0.1,
    });
    expect(validateEnv({ OVERLOAD_MAX_IN_FLIGHT: '0' }).overload.maxInFlight).toBe(0);
    // The longest Retry-After is at least twice the base, which the base's own draw reaches.
    expect(validateEnv({ OVERLOAD_RETRY_AFTER_SECONDS: '20' }).overload.retryAfterMaxSeconds).toBe(
      40,
    );
    expect(
      refusal({ OVERLOAD_RETRY_AFTER_SECONDS: '5', OVERLOAD_RETRY_AFTER_MAX_SECONDS: '9' }).message,
    ).toContain('OVERLOAD_RETRY_AFTER_MAX_SECONDS must be an integer between 10 and 7200');
    expect(validateEnv({ OVERLOAD_RETRY_SHARE_PERCENT: '0' }).overload.retryShare).toBe(0);
    expect(refusal({ OVERLOAD_RETRY_SHARE_PERCENT: '101' }).message).toContain(
      'OVERLOAD_RETRY_SHARE_PERCENT',
    );
    expect(refusal({ OVERLOAD_MAX_IN_FLIGHT: '-1' }).message).toContain('OVERLOAD_MAX_IN_FLIGHT');
    expect(validateEnv({ OVERLOAD_LATENCY_TARGET_MS: '250' }).overload.latencyTargetMs).toBe(250);
    expect(refusal({ OVERLOAD_LATENCY_TARGET_MS: '60001' }).message).toContain(
      'OVERLOAD_LATENCY_TARGET_MS',
    );
    expect(refusal({ OVERLOAD_RETRY_AFTER_SECONDS: '0' }).message).toContain(
      'OVERLOAD_RETRY_AFTER_SECONDS',
    );
  });

  it('should leave tracing off without OTEL_EXPORTER_OTLP_ENDPOINT and read its sampler as the spec names them', () => {
    expect(validateEnv({}).tracing).toEqual({
      endpoint: null,
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      serviceName: 'seckill',
    });
    const on = validateEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
    }).tracing;
    expect(on).toMatchObject({
      endpoint: 'http://collector:4318',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.01,
    });
    expect(refusal({ OTEL_TRACES_SAMPLER: 'sometimes' }).message).toContain('OTEL_TRACES_SAMPLER');
    expect(refusal({ OTEL_TRACES_SAMPLER_ARG: '2' }).message).toContain('OTEL_TRACES_SAMPLER_ARG');
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://x' }).message).toContain(
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    );
  });

  it('should bound the result streams per client address by RESULT_STREAM_MAX_PER_IP', () => {
    expect(validateEnv({}).seckill.resultStream.maxPerIp).toBe(100);
    expect(validateEnv({ RESULT_STREAM_MAX_PER_IP: '3' }).seckill.resultStream.maxPerIp).toBe(3);
    expect(refusal({ RESULT_STREAM_MAX_PER_IP: '0' }).message).toBe(
      'RESULT_STREAM_MAX_PER_IP must be an integer between 1 and 1000000, got "0"',
    );
  });

  it('should read FAULT_DELAYS as slow steps at pause points, and none by default', () => {
    expect(validateEnv({}).faults.delays).toEqual([]);
    expect(
      validateEnv({ FAULT_DELAYS: 'before-order-write:8000:10, preheat-before-stock:1500:100' })
        .faults.delays,
    ).toEqual([
      { point: 'before-order-write', ms: 8000, percent: 10 },
      { point: 'preheat-before-stock', ms: 1500, percent: 100 },
    ]);
  });

  it('should refuse FAULT_DELAYS naming an unknown point or out of range, and in production', () => {
    expect(refusal({ FAULT_DELAYS: 'after-lunch:100:5' }).message).toMatch(
      /FAULT_DELAYS .* got "after-lunch:100:5"/,
    );
    expect(refusal({ FAULT_DELAYS: 'before-sale-lock:100:101' }).message).toMatch(/FAULT_DELAYS/);
    expect(refusal({ FAULT_DELAYS: 'before-sale-lock:-1:5' }).message).toMatch(/FAULT_DELAYS/);
    expect(
      refusal({
        NODE_ENV: 'production',
        JWT_SECRET: 'a-real-secret',
        FAULT_DELAYS: 'before-sale-lock:100:5',
      }).message,
    ).toBe('FAULT_DELAYS is for tests and refused in production');
    expect(refusal({ FAULT_DELAYS_SWITCH_FILE: '/tmp/slow' }).message).toBe(
      'FAULT_DELAYS_SWITCH_FILE needs FAULT_DELAYS',
    );
  });

  it('should refuse to run in production with the default JWT secret', () => {
    const error = refusal({ NODE_ENV: 'production' });

    expect(error).toBeInstanceOf(ConfigValidationError);
    expect(error.message).toContain('JWT_SECRET');
  });

  it('should run in production with a JWT secret of its own', () => {
    const config = validateEnv({ NODE_ENV: 'production', JWT_SECRET: 'a-real-secret' });

    expect(config.app.nodeEnv).toBe('production');
    expect(config.auth.jwtSecretIsDefault).toBe(false);
  });

  it('should allow the default JWT secret outside production and say it is the default', () => {
    expect(validateEnv({ NODE_ENV: 'test' }).auth.jwtSecretIsDefault).toBe(true);
  });

  it('should read REDIS_CLUSTER_NODES as host:port seeds, and leave it off when unset', () => {
    expect(validateEnv({}).redis.clusterNodes).toBeNull();
    expect(
      validateEnv({ REDIS_CLUSTER_NODES: ' 127.0.0.1:7000, redis-2.internal:7001,[::1]:7002, ' })
        .redis.clusterNodes,
    ).toEqual([
      { host: '127.0.0.1', port: 7000 },
      { host: 'redis-2.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
  });

  it.each([
    '127.0.0.1',
    '127.0.0.1:0',
    'redis:70000',
    ':7000',
    'redis://10.0.0.1:7000',
    '[zz]:1',
    'a b:1',
  ])('should refuse REDIS_CLUSTER_NODES seed %j, naming the variable', (seed) => {
    const error = refusal({ REDIS_CLUSTER_NODES: `127.0.0.1:7000,${seed}` });
    expect(error).toBeInstanceOf(ConfigValidationError);
    expect(error.message).toMatch(/^REDIS_CLUSTER_NODES/);
    expect(error.message).toContain(seed);
  });

  it('should read REDIS_CLUSTER_NAT_MAP as announced=reached addresses keyed as the cluster names them', () => {
    expect(validateEnv({ REDIS_CLUSTER_NODES: '127.0.0.1:7000' }).redis.clusterNatMap).toEqual({});
    expect(
      validateEnv({
        REDIS_CLUSTER_NODES: '10.0.0.1:7000',
        REDIS_CLUSTER_NAT_MAP:
          ' 172.17.0.2:6379=10.0.0.1:7000, [fd00::2]:6379 = redis-b.internal:7001 ',
      }).redis.clusterNatMap,
    ).toEqual({
      '172.17.0.2:6379': { host: '10.0.0.1', port: 7000 },
      'fd00::2:6379': { host: 'redis-b.internal', port: 7001 },
    });
  });

  it.each([
    ['172.17.0.2:6379', 'must list announced=reached'],
    ['172.17.0.2:6379=10.0.0.1', 'must list announced=reached'],
    ['172.17.0.2:6379=10.0.0.1:7000=x:1', 'must list announced=reached'],
    ['=10.0.0.1:7000', 'must list announced=reached'],
    ['172.17.0.2:6379=10.0.0.1:7000,172.17.0.2:6379=10.0.0.1:7001', 'maps 172.17.0.2:6379 twice'],
  ])('should refuse REDIS_CLUSTER_NAT_MAP %j, naming the variable', (natMap, reason) => {
    const error = refusal({ REDIS_CLUSTER_NODES: '10.0.0.1:7000', REDIS_CLUSTER_NAT_MAP: natMap });
    expect(error).toBeInstanceOf(ConfigValidationError);
    expect(error.message).toMatch(/^REDIS_CLUSTER_NAT_MAP/);
    expect(error.message).toContain(reason);
  });

  it('should refuse REDIS_CLUSTER_NAT_MAP without REDIS_CLUSTER_NODES', () => {
    const error = refusal({ REDIS_CLUSTER_NAT_MAP: '172.17.0.2:6379=10.0.0.1:7000' });
    expect(error.message).toMatch(/^REDIS_CLUSTER_NAT_MAP is set without REDIS_CLUSTER_NODES/);
  });

  it('should leave the payment webhook off without a secret, in CNY, with 300 s of tolerance', () => {
    expect(validateEnv({}).payments).toEqual({
      webhookSecrets: [],
      toleranceSeconds: 300,
      graceMs: 120_000,
      currency: 'CNY',
    });
  });

  it('should read two payment secrets while one is rotated, and refuse three, short ones or a bad currency', () => {
    const two = validateEnv({
      PAYMENT_WEBHOOK_SECRET: 'whsec_old_0123456789, whsec_new_0123456789',
    });
    expect(two.payments.webhookSecrets).toEqual(['whsec_old_0123456789', 'whsec_new_0123456789']);
    expect(
      refusal({
        PAYMENT_WEBHOOK_SECRET: 'a'.repeat(16) + ',' + 'b'.repeat(16) + ',' + 'c'.repeat(16),
      }).message,
    ).toMatch(/^PAYMENT_WEBHOOK_SECRET holds at most 2/);
    expect(refusal({ PAYMENT_WEBHOOK_SECRET: 'short' }).message).toMatch(
      /^PAYMENT_WEBHOOK_SECRET: /,
    );
    expect(refusal({ SHOP_CURRENCY: 'yuan' }).message).toMatch(/^SHOP_CURRENCY must be/);
    expect(refusal({ PAYMENT_GRACE_SECONDS: '-1' }).message).toMatch(/^PAYMENT_GRACE_SECONDS/);
  });

  it('should leave merchant events off without a URL, and refuse a URL without a secret of its own', () => {
    expect(validateEnv({}).merchant).toEqual({
      url: null,
      secret: '',
      retryForMs: 86_400_000,
      timeoutMs: 5_000,
    });
    const on = validateEnv({
      MERCHANT_WEBHOOK_URL: 'https://shop.example/hooks/seckill',
      MERCHANT_WEBHOOK_SECRET: 'whsec_merchant_0123456789',
    });
    expect(on.merchant.url).toBe('https://shop.example/hooks/seckill');
    expect(refusal({ MERCHANT_WEBHOOK_URL: 'https://shop.example/hooks' }).message).toMatch(
      /^MERCHANT_WEBHOOK_SECRET must be set/,
    );
    expect(
      refusal({
        MERCHANT_WEBHOOK_URL: 'ftp://shop.example',
        MERCHANT_WEBHOOK_SECRET: 'x'.repeat(20),
      }).message,
    ).toMatch(/^MERCHANT_WEBHOOK_URL must use/);
  });

  it('should parse TRUSTED_PROXIES as a comma-separated, trimmed list', () => {
    const config = validateEnv({ TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8' });

    expect(config.http.trustedProxies).toEqual(['127.0.0.1', '10.0.0.0/8']);
  });

  describe('security settings', () => {
    it('should default to rate limits on, tokens off, CORS off and a 1 h idempotency retention', () => {
      const config = validateEnv({});

      expect(config.rateLimit.throttle).toEqual({
        enabled: true,
        windowMs: 1_000,
        blockMs: 1_000,
        purchaseUser: 5,
        purchaseIp: 100,
        purchaseGlobal: 0,
        tokenUser: 5,
        tokenIp: 100,
        readUser: 30,
        readIp: 300,
      });
      expect(config).toMatchObject({
        http: { corsOrigins: [] },
        seckill: {
          requireToken: false,
          tokenTtlMs: 60_000,
          tokenEarlyMs: 0,
          idempotencyRetentionMs: 3_600_000,
        },
      });
    });

    it('should read trusted proxies as addresses and CIDRs', () => {
      expect(
        validateEnv({ TRUSTED_PROXIES: '127.0.0.1, ::1,10.0.0.0/8,fd00::/8' }).http.trustedProxies,
      ).toEqual(['127.0.0.1', '::1', '10.0.0.0/8', 'fd00::/8']);
    });

    it.each(['localhost', '10.0.0.0/33', '10.0.0.1/8/1', '300.1.1.1'])(
      'should refuse TRUSTED_PROXIES entry %s, naming the variable',
      (entry) => {
        expect(refusal({ TRUSTED_PROXIES: entry }).message).toMatch(/^TRUSTED_PROXIES/);
      },
    );

    it('should read CORS origins', () => {
      expect(
        validateEnv({ CORS_ORIGINS: 'https://shop.example.com, http://localhost:5173' }).http
          .corsOrigins,
      ).toEqual(['https://shop.example.com', 'http://localhost:5173']);
    });

    it.each(['*', 'https://shop.example.com/', 'shop.example.com', 'ftp://x.example'])(
      'should refuse CORS_ORIGINS entry %s, naming the variable',
      (entry) => {
        expect(refusal({ CORS_ORIGINS: entry }).message).toMatch(/^CORS_ORIGINS/);
      },
    );

    it('should name a bad rate limit', () => {
      expect(refusal({ THROTTLE_PURCHASE_USER_LIMIT: '-1' }).message).toMatch(
        /^THROTTLE_PURCHASE_USER_LIMIT/,
      );
    });

    it('should serve Swagger by default except in production, where it must be switched on', () => {
      const production = { NODE_ENV: 'production', JWT_SECRET: 'a-real-secret' };

      expect(validateEnv({}).http.swaggerEnabled).toBe(true);
      expect(validateEnv(production).http.swaggerEnabled).toBe(false);
      expect(validateEnv({ ...production, SWAGGER_ENABLED: 'true' }).http.swaggerEnabled).toBe(
        true,
      );
    });

    it('should never serve Swagger on a worker, which has no API to document', () => {
      expect(validateEnv({ APP_ROLE: 'worker', SWAGGER_ENABLED: 'true' }).http.swaggerEnabled).toBe(
        false,
      );
    });

    it('should leave /metrics open and token ages unlimited unless told otherwise', () => {
      expect(validateEnv({}).auth).toMatchObject({ metricsToken: null, jwtMaxAgeSeconds: null });
      expect(
        validateEnv({ METRICS_TOKEN: ' scrape-me-0123456789 ', JWT_MAX_AGE_SECONDS: '86400' }).auth,
      ).toMatchObject({ metricsToken: 'scrape-me-0123456789', jwtMaxAgeSeconds: 86_400 });
    });

    it.each([
      ['METRICS_TOKEN', 'two words'],
      ['JWT_MAX_AGE_SECONDS', '0'],
      ['JWT_MAX_AGE_SECONDS', '1h'],
    ])('should refuse %s=%j, naming the variable', (name, value) => {
      expect(refusal({ [name]: value }).message).toMatch(new RegExp(`^${name}`));
    });

    it('should make the block as long as the window unless told otherwise', () => {
      expect(validateEnv({ THROTTLE_WINDOW_MS: '5000' }).rateLimit.throttle.blockMs).toBe(5_000);
      expect(
        validateEnv({ THROTTLE_WINDOW_MS: '5000', THROTTLE_BLOCK_MS: '60000' }).rateLimit.throttle
          .blockMs,
      ).toBe(60_000);
    });
  });
});
