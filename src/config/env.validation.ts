import { isIP } from 'node:net';
import { validateCronExpression } from 'cron';
import { MAX_STOCK_SHARDS } from '../infra/redis/stock-buckets.js';
import {
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevelName,
} from '../common/logging/logging.js';

export { LOG_LEVELS, type LogLevelName };

/**
 * The environment is read once, at boot, into a typed object. Anything wrong stops the process
 * with a message naming the variable, so a bad deploy fails before it takes traffic.
 */
export interface AppConfig {
  nodeEnv: string;
  /** What this instance runs; see APP_ROLES. */
  appRole: AppRole;
  logLevel: LogLevelName;
  /** JSON lines, or pino-pretty's; JSON in production unless LOG_FORMAT says otherwise. */
  logFormat: LogFormat;
  /** Lines logged while a request is handled carry its ids (AsyncLocalStorage; see logging). */
  logRequestContext: boolean;
  port: number;
  databaseUrl: string;
  redisUrl: string;
  /** Seeds of a Redis Cluster (REDIS_CLUSTER_NODES); when set, redisUrl is not used. */
  redisClusterNodes: RedisNode[] | null;
  rabbitmqUrl: string;
  rabbitmqPrefix: string;
  jwtSecret: string;
  jwtSecretIsDefault: boolean;
  orderPaymentTimeoutMs: number;
  trustedProxies: string[];
  bodyLimitBytes: number;
  /** A request's headers and body must arrive within this, or it is 408 and its connection closed. */
  requestTimeoutMs: number;
  /** Off by default in production: the document maps every route, the admin ones included. */
  swaggerEnabled: boolean;
  /** When set, /metrics requires it as a bearer token. */
  metricsToken: string | null;
  /** When set, tokens whose `exp` is further ahead than this (from now or from `iat`) are refused. */
  jwtMaxAgeSeconds: number | null;
  preheatCronEnabled: boolean;
  /** When the preheat job runs: a cron expression (an optional seconds field first). */
  preheatCron: string;
  preheatLookaheadMs: number;
  outboxSweepEnabled: boolean;
  outboxSweepIntervalMs: number;
  outboxStaleMs: number;
  publishConfirmTimeoutMs: number;
  purchaseLockTtlMs: number;
  consumerEnabled: boolean;
  consumerPrefetch: number;
  consumerBatchSize: number;
  consumerBatchWaitMs: number;
  consumerMaxDeliveries: number;
  shutdownTimeoutMs: number;
  expirySweepEnabled: boolean;
  expirySweepIntervalMs: number;
  expirySweepGraceMs: number;
  reconcileEnabled: boolean;
  reconcileIntervalMs: number;
  redisWatchIntervalMs: number;
  queueMaxLength: number;
  queueType: 'quorum' | 'classic';
  saleEvictionEnabled: boolean;
  saleEvictionIntervalMs: number;
  saleKeysRetentionMs: number;
  /** Test-only fault hook: SIGKILL the process at this point, the Nth time it is reached. */
  faultCrash: { point: FaultPoint; after: number } | null;
  /**
   * Test-only slow steps (FAULT_DELAYS): each time a pause point is reached, with this chance, it
   * waits this long. The random-fault checker widens rare interleavings with them.
   */
  faultDelays: FaultDelay[];
  /**
   * FAULT_DELAYS_SWITCH_FILE: the slow steps are on while this file says `on`, read at boot and
   * at each SIGUSR2; null: always on.
   */
  faultDelaysSwitchFile: string | null;
  rateLimit: RateLimitConfig;
  /** Exact origins allowed by CORS; empty = CORS off (no Access-Control-* headers). */
  corsOrigins: string[];
  seckillRequireToken: boolean;
  seckillTokenTtlMs: number;
  seckillTokenEarlyMs: number;
  /** The purchase-token route requires a solved ALTCHA challenge (X-Seckill-Challenge). */
  seckillRequireChallenge: boolean;
  /** altcha-lib's `cost` for PBKDF2/SHA-256: iterations per attempt the solver makes. */
  challengeCost: number;
  challengeTtlMs: number;
  /** Throttled more than `threshold` times within the window: blocklisted. 0 = off. */
  autoban: { threshold: number; windowMs: number; banSeconds: number };
  /** How long an instance answers SOLD_OUT from memory after Redis said so; 0 = off. */
  soldOutMemoMs: number;
  /** `database`: while Redis is unreachable or rebuilt, MySQL alone decides purchases; `closed`: 503. */
  redisDownMode: RedisDownMode;
  /** Database-mode purchases at once on this instance; more are 503 without touching MySQL. */
  fallbackMaxInflight: number;
  /** Stock buckets of a goods created without `stockShards`. */
  stockShards: number;
  /** How long after a sale's end an Idempotency-Key's answer is kept. */
  idempotencyRetentionMs: number;
  resultStream: ResultStreamConfig;
}

/** GET /api/v1/seckill/:goodsId/result/stream: its bounds. */
export interface ResultStreamConfig {
  /** Streams one user may hold open at once, across instances. */
  maxPerUser: number;
  /** Streams one client address may hold open at once, across instances, whatever its users. */
  maxPerIp: number;
  /** Streams this instance serves at once. */
  maxPerInstance: number;
  /** A stream ends after this; the client reconnects. */
  lifetimeMs: number;
  /** A comment line this often keeps proxies from closing a quiet stream. */
  heartbeatMs: number;
}

/** One `host:port` seed of a Redis Cluster. */
export interface RedisNode {
  host: string;
  port: number;
}

/** Requests per window; 0 turns that limit off. */
export interface RateLimitConfig {
  enabled: boolean;
  windowMs: number;
  blockMs: number;
  purchaseUser: number;
  purchaseIp: number;
  purchaseGlobal: number;
  tokenUser: number;
  tokenIp: number;
  readUser: number;
  readIp: number;
}

/**
 * `all`: the HTTP API and the consumers and scheduled jobs. `api`: the HTTP API and publishing,
 * nothing consumed. `worker`: the consumers and scheduled jobs; over HTTP only /health/* and
 * /metrics.
 */
export const APP_ROLES = ['all', 'api', 'worker'] as const;
export type AppRole = (typeof APP_ROLES)[number];

export const DEV_JWT_SECRET = 'dev-insecure-jwt-secret-change-me';

type Env = Record<string, string | undefined>;

export class ConfigValidationError extends Error {}

function readString(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? fallback : raw.trim();
}

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.trim());
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigValidationError(
      `${name} must be an integer between ${min} and ${max}, got "${raw}"`,
    );
  }
  return value;
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigValidationError(`${name} must be true or false, got "${env[name]}"`);
}

function readUrl(env: Env, name: string, fallback: string, protocols: string[]): string {
  const value = readString(env, name, fallback);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigValidationError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigValidationError(
      `${name} must use ${protocols.join(' or ')}, got "${url.protocol}"`,
    );
  }
  return value;
}

/** An unset variable is null (the feature is off) rather than a default value. */
function readOptionalInt(env: Env, name: string, min: number, max: number): number | null {
  return readString(env, name, '') === '' ? null : readInt(env, name, 0, min, max);
}

function readMetricsToken(env: Env): string | null {
  const token = readString(env, 'METRICS_TOKEN', '');
  if (token === '') return null;
  // It travels as one header token: spaces or control characters could never match.
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigValidationError(
      'METRICS_TOKEN may hold only printable ASCII characters without spaces',
    );
  }
  return token;
}

/** Every 10 seconds. */
export const DEFAULT_PREHEAT_CRON = '*/10 * * * * *';

function readPreheatCron(env: Env): string {
  if (readString(env, 'PREHEAT_INTERVAL_MS', '') !== '') {
    // Ignoring it would quietly run the job on another schedule than the one asked for.
    throw new ConfigValidationError(
      `PREHEAT_INTERVAL_MS is no longer read: set PREHEAT_CRON, a cron expression (default "${DEFAULT_PREHEAT_CRON}", every 10 s; "*/30 * * * * *" is every 30 s)`,
    );
  }
  const expression = readString(env, 'PREHEAT_CRON', DEFAULT_PREHEAT_CRON);
  const { valid, error } = validateCronExpression(expression);
  if (!valid) {
    throw new ConfigValidationError(
      `PREHEAT_CRON must be a cron expression ("[second] minute hour day-of-month month day-of-week", e.g. "${DEFAULT_PREHEAT_CRON}"), got "${expression}"${error ? `: ${error.message}` : ''}`,
    );
  }
  return expression;
}

/**
 * `auto`: on where AsyncLocalStorage is cheap. Up to Node 22 it runs on promise hooks, which cost
 * every promise of the process something (0.05 ms of CPU per purchase, measured here on Node 20);
 * Node 24 carries the context on the promise itself (AsyncContextFrame).
 */
function readLogRequestContext(env: Env): boolean {
  const raw = readString(env, 'LOG_REQUEST_CONTEXT', 'auto').toLowerCase();
  if (raw === 'auto') return Number(process.versions.node.split('.')[0]) >= 24;
  return readBool(env, 'LOG_REQUEST_CONTEXT', false);
}

function readAppRole(env: Env): AppRole {
  return readOneOf(env, 'APP_ROLE', APP_ROLES, 'all');
}

function readOneOf<T extends string>(
  env: Env,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const value = readString(env, name, fallback) as T;
  if (!choices.includes(value)) {
    throw new ConfigValidationError(
      `${name} must be one of ${choices.join(', ')}, got "${env[name]}"`,
    );
  }
  return value;
}

export const REDIS_DOWN_MODES = ['database', 'closed'] as const;
export type RedisDownMode = (typeof REDIS_DOWN_MODES)[number];

function readQueueType(env: Env): AppConfig['queueType'] {
  const type = readString(env, 'RABBITMQ_QUEUE_TYPE', 'quorum');
  if (type !== 'quorum' && type !== 'classic') {
    throw new ConfigValidationError('RABBITMQ_QUEUE_TYPE must be quorum or classic');
  }
  return type;
}

export const FAULT_POINTS = ['after-deduct', 'after-commit', 'after-cancel-commit'] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

/** FAULT_CRASH_POINT (one of FAULT_POINTS) and FAULT_CRASH_AFTER (N, default 1). */
function readFaultHook(env: Env, nodeEnv: string): AppConfig['faultCrash'] {
  const point = readString(env, 'FAULT_CRASH_POINT', '');
  if (point === '') return null;
  if (!FAULT_POINTS.includes(point as FaultPoint)) {
    throw new ConfigValidationError(`FAULT_CRASH_POINT must be one of ${FAULT_POINTS.join(', ')}`);
  }
  if (nodeEnv === 'production') {
    throw new ConfigValidationError('FAULT_CRASH_POINT is for tests and refused in production');
  }
  return { point: point as FaultPoint, after: readInt(env, 'FAULT_CRASH_AFTER', 1, 1, 1_000_000) };
}

/** Where a step can be held by a test (FaultInjector.holdAt) or slowed (FAULT_DELAYS). */
export const PAUSE_POINTS = [
  'before-order-write',
  'before-sale-lock',
  'fallback-return-stale-read',
  'preheat-before-stock',
] as const;
export type PausePoint = (typeof PAUSE_POINTS)[number];
export interface FaultDelay {
  point: PausePoint;
  ms: number;
  /** The chance, 0-100, that reaching the point waits. */
  percent: number;
}

/** FAULT_DELAYS: comma-separated `point:ms:percent`, e.g. `before-order-write:8000:10`. */
function readFaultDelays(env: Env, nodeEnv: string): FaultDelay[] {
  const raw = readString(env, 'FAULT_DELAYS', '');
  if (raw === '') return [];
  if (nodeEnv === 'production') {
    throw new ConfigValidationError('FAULT_DELAYS is for tests and refused in production');
  }
  return raw.split(',').map((item) => {
    const [point, ms, percent] = item.trim().split(':');
    const delay = { point: point as PausePoint, ms: Number(ms), percent: Number(percent) };
    if (
      !PAUSE_POINTS.includes(delay.point) ||
      !Number.isInteger(delay.ms) ||
      delay.ms < 0 ||
      delay.ms > 600_000 ||
      !Number.isFinite(delay.percent) ||
      delay.percent < 0 ||
      delay.percent > 100
    ) {
      throw new ConfigValidationError(
        `FAULT_DELAYS must be comma-separated point:ms:percent (point one of ${PAUSE_POINTS.join(', ')}, ms 0-600000, percent 0-100); got "${item.trim()}"`,
      );
    }
    return delay;
  });
}

function readFaultDelaysSwitchFile(env: Env): string | null {
  const path = readString(env, 'FAULT_DELAYS_SWITCH_FILE', '');
  if (path !== '' && readString(env, 'FAULT_DELAYS', '') === '') {
    throw new ConfigValidationError('FAULT_DELAYS_SWITCH_FILE needs FAULT_DELAYS');
  }
  return path === '' ? null : path;
}

function readRateLimits(env: Env): RateLimitConfig {
  const limit = (name: string, fallback: number) => readInt(env, name, fallback, 0, 1_000_000);
  const windowMs = readInt(env, 'THROTTLE_WINDOW_MS', 1_000, 100, 3_600_000);
  return {
    enabled: readBool(env, 'THROTTLE_ENABLED', true),
    windowMs,
    // 0: a client over a limit waits only for the rest of its window.
    blockMs: readInt(env, 'THROTTLE_BLOCK_MS', 0, 0, 86_400_000) || windowMs,
    purchaseUser: limit('THROTTLE_PURCHASE_USER_LIMIT', 5),
    purchaseIp: limit('THROTTLE_PURCHASE_IP_LIMIT', 100),
    purchaseGlobal: limit('THROTTLE_PURCHASE_GLOBAL_LIMIT', 0),
    tokenUser: limit('THROTTLE_TOKEN_USER_LIMIT', 5),
    tokenIp: limit('THROTTLE_TOKEN_IP_LIMIT', 100),
    readUser: limit('THROTTLE_READ_USER_LIMIT', 30),
    readIp: limit('THROTTLE_READ_IP_LIMIT', 300),
  };
}

function readResultStream(env: Env): ResultStreamConfig {
  return {
    maxPerUser: readInt(env, 'RESULT_STREAM_MAX_PER_USER', 2, 1, 100),
    maxPerIp: readInt(env, 'RESULT_STREAM_MAX_PER_IP', 100, 1, 1_000_000),
    maxPerInstance: readInt(env, 'RESULT_STREAM_MAX_PER_INSTANCE', 10_000, 1, 1_000_000),
    lifetimeMs: readInt(env, 'RESULT_STREAM_LIFETIME_MS', 600_000, 1_000, 86_400_000),
    heartbeatMs: readInt(env, 'RESULT_STREAM_HEARTBEAT_MS', 15_000, 1_000, 600_000),
  };
}

function readTrustedProxies(env: Env): string[] {
  const entries = readString(env, 'TRUSTED_PROXIES', '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address, bits, ...rest] = entry.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const badBits = bits !== undefined && (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > maxBits);
    // A typo here would silently make every client share the proxy's address (or trust anyone).
    if (family === 0 || badBits || rest.length > 0) {
      throw new ConfigValidationError(
        `TRUSTED_PROXIES must list IP addresses or CIDRs (e.g. 127.0.0.1,10.0.0.0/8), got "${entry}"`,
      );
    }
  }
  return entries;
}

/**
 * REDIS_CLUSTER_NODES: comma-separated `host:port` seeds (an IPv6 address in brackets); null when
 * unset. A seed that cannot be a node's address stops the boot rather than a client retrying it.
 */
function readRedisClusterNodes(env: Env): RedisNode[] | null {
  const entries = readString(env, 'REDIS_CLUSTER_NODES', '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) return null;
  return entries.map((entry) => {
    const match =
      /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})$/.exec(entry);
    const port = Number(match?.[2]);
    const host = match?.[1].replace(/^\[(.*)\]$/, '$1') ?? '';
    if (!match || port < 1 || port > 65_535 || (match[1].startsWith('[') && isIP(host) !== 6)) {
      throw new ConfigValidationError(
        `REDIS_CLUSTER_NODES must list host:port seeds separated by commas (e.g. 10.0.0.1:7000,10.0.0.2:7000), got "${entry}"`,
      );
    }
    return { host, port };
  });
}

function readCorsOrigins(env: Env): string[] {
  const origins = readString(env, 'CORS_ORIGINS', '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const origin of origins) {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    // Browsers send the origin as scheme://host[:port]; anything else would never match.
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.origin !== origin) {
      throw new ConfigValidationError(
        `CORS_ORIGINS must list origins like https://shop.example.com (no path, no "*"), got "${origin}"`,
      );
    }
  }
  return origins;
}

export function validateEnv(env: Env): AppConfig {
  const nodeEnv = readString(env, 'NODE_ENV', 'development');
  const jwtSecret = readString(env, 'JWT_SECRET', DEV_JWT_SECRET);
  const jwtSecretIsDefault = jwtSecret === DEV_JWT_SECRET;
  if (jwtSecretIsDefault && nodeEnv === 'production') {
    throw new ConfigValidationError('JWT_SECRET must be set in production (the default is public)');
  }
  const prefix = readString(env, 'RABBITMQ_PREFIX', 'seckill');
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(prefix)) {
    throw new ConfigValidationError(
      'RABBITMQ_PREFIX may hold only letters, digits, "_", "." and "-"',
    );
  }
  const appRole = readAppRole(env);
  const logLevel = readString(env, 'LOG_LEVEL', 'log') as LogLevelName;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigValidationError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const logFormat = readString(env, 'LOG_FORMAT', nodeEnv === 'production' ? 'json' : 'pretty');
  if (!LOG_FORMATS.includes(logFormat as LogFormat)) {
    throw new ConfigValidationError(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}`);
  }
  return {
    nodeEnv,
    appRole,
    logLevel,
    logFormat: logFormat as LogFormat,
    logRequestContext: readLogRequestContext(env),
    port: readInt(env, 'PORT', 3000, 0, 65535),
    databaseUrl: readUrl(env, 'DATABASE_URL', 'mysql://root:@127.0.0.1:3306/seckill', [
      'mysql:',
      'mariadb:',
    ]),
    redisUrl: readUrl(env, 'REDIS_URL', 'redis://127.0.0.1:6379/0', ['redis:', 'rediss:']),
    redisClusterNodes: readRedisClusterNodes(env),
    rabbitmqUrl: readUrl(env, 'RABBITMQ_URL', 'amqp://guest:guest@127.0.0.1:5672/', [
      'amqp:',
      'amqps:',
    ]),
    rabbitmqPrefix: prefix,
    jwtSecret,
    jwtSecretIsDefault,
    orderPaymentTimeoutMs: readInt(env, 'ORDER_PAYMENT_TIMEOUT_MS', 900_000, 1_000, 2 ** 31 - 1),
    trustedProxies: readTrustedProxies(env),
    bodyLimitBytes: readInt(env, 'BODY_LIMIT_BYTES', 1_048_576, 1_024, 100 * 1_048_576),
    requestTimeoutMs: readInt(env, 'REQUEST_TIMEOUT_MS', 10_000, 100, 600_000),
    // A worker serves no API, so it has nothing to document (and /docs would be a route more).
    swaggerEnabled:
      appRole !== 'worker' && readBool(env, 'SWAGGER_ENABLED', nodeEnv !== 'production'),
    metricsToken: readMetricsToken(env),
    jwtMaxAgeSeconds: readOptionalInt(env, 'JWT_MAX_AGE_SECONDS', 1, 10 * 365 * 86_400),
    preheatCronEnabled: readBool(env, 'PREHEAT_CRON_ENABLED', true),
    preheatCron: readPreheatCron(env),
    preheatLookaheadMs: readInt(env, 'PREHEAT_LOOKAHEAD_MS', 600_000, 0, 7 * 86_400_000),
    outboxSweepEnabled: readBool(env, 'OUTBOX_SWEEP_ENABLED', true),
    outboxSweepIntervalMs: readInt(env, 'OUTBOX_SWEEP_INTERVAL_MS', 2_000, 100, 3_600_000),
    outboxStaleMs: readInt(env, 'OUTBOX_STALE_MS', 5_000, 100, 3_600_000),
    publishConfirmTimeoutMs: readInt(env, 'PUBLISH_CONFIRM_TIMEOUT_MS', 3_000, 50, 60_000),
    purchaseLockTtlMs: readInt(env, 'PURCHASE_LOCK_TTL_MS', 5_000, 100, 60_000),
    consumerEnabled: readBool(env, 'CONSUMER_ENABLED', true),
    consumerPrefetch: readInt(env, 'CONSUMER_PREFETCH', 500, 1, 10_000),
    consumerBatchSize: readInt(env, 'CONSUMER_BATCH_SIZE', 200, 1, 5_000),
    // Only while the consumer is idle (see Batcher): in a crowd, batches take what gathered
    // during the previous one and nothing waits on this.
    consumerBatchWaitMs: readInt(env, 'CONSUMER_BATCH_WAIT_MS', 50, 0, 10_000),
    consumerMaxDeliveries: readInt(env, 'CONSUMER_MAX_DELIVERIES', 5, 1, 1_000),
    shutdownTimeoutMs: readInt(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    expirySweepEnabled: readBool(env, 'EXPIRY_SWEEP_ENABLED', true),
    expirySweepIntervalMs: readInt(env, 'EXPIRY_SWEEP_INTERVAL_MS', 60_000, 1_000, 86_400_000),
    expirySweepGraceMs: readInt(env, 'EXPIRY_SWEEP_GRACE_MS', 60_000, 0, 86_400_000),
    reconcileEnabled: readBool(env, 'RECONCILE_ENABLED', true),
    reconcileIntervalMs: readInt(env, 'RECONCILE_INTERVAL_MS', 60_000, 1_000, 86_400_000),
    redisWatchIntervalMs: readInt(env, 'REDIS_WATCH_INTERVAL_MS', 1_000, 100, 60_000),
    queueMaxLength: readInt(env, 'RABBITMQ_QUEUE_MAX_LENGTH', 1_000_000, 1, 100_000_000),
    queueType: readQueueType(env),
    saleEvictionEnabled: readBool(env, 'SALE_EVICTION_ENABLED', true),
    saleEvictionIntervalMs: readInt(env, 'SALE_EVICTION_INTERVAL_MS', 600_000, 1_000, 86_400_000),
    saleKeysRetentionMs: readInt(env, 'SALE_KEYS_RETENTION_MS', 86_400_000, 0, 30 * 86_400_000),
    faultCrash: readFaultHook(env, nodeEnv),
    faultDelays: readFaultDelays(env, nodeEnv),
    faultDelaysSwitchFile: readFaultDelaysSwitchFile(env),
    rateLimit: readRateLimits(env),
    corsOrigins: readCorsOrigins(env),
    seckillRequireToken: readBool(env, 'SECKILL_REQUIRE_TOKEN', false),
    seckillTokenTtlMs: readInt(env, 'SECKILL_TOKEN_TTL_MS', 60_000, 1_000, 3_600_000),
    seckillTokenEarlyMs: readInt(env, 'SECKILL_TOKEN_EARLY_MS', 0, 0, 600_000),
    seckillRequireChallenge: readBool(env, 'SECKILL_REQUIRE_CHALLENGE', false),
    challengeCost: readInt(env, 'CHALLENGE_COST', 5_000, 1, 1_000_000),
    challengeTtlMs: readInt(env, 'CHALLENGE_TTL_MS', 120_000, 5_000, 3_600_000),
    autoban: {
      threshold: readInt(env, 'AUTOBAN_THRESHOLD', 50, 0, 1_000_000),
      windowMs: readInt(env, 'AUTOBAN_WINDOW_SECONDS', 60, 1, 86_400) * 1000,
      banSeconds: readInt(env, 'AUTOBAN_SECONDS', 600, 1, 31_536_000),
    },
    soldOutMemoMs: readInt(env, 'SOLD_OUT_MEMO_MS', 1_000, 0, 60_000),
    redisDownMode: readOneOf(env, 'REDIS_DOWN_MODE', REDIS_DOWN_MODES, 'database'),
    fallbackMaxInflight: readInt(env, 'FALLBACK_MAX_INFLIGHT', 32, 1, 10_000),
    stockShards: readInt(env, 'STOCK_SHARDS', 1, 1, MAX_STOCK_SHARDS),
    idempotencyRetentionMs: readInt(
      env,
      'IDEMPOTENCY_RETENTION_MS',
      3_600_000,
      60_000,
      30 * 86_400_000,
    ),
    resultStream: readResultStream(env),
  };
}
