import { MAX_STOCK_SHARDS } from '../common/stock-buckets.js';
import { configNamespace } from './config-namespace.js';
import { readBool, readInt, type Env } from './env-readers.js';

/** The sale itself: what a purchase needs, what it holds, how long its traces are kept. */
export interface SeckillConfig {
  /** Purchases need a one-time X-Seckill-Token. */
  requireToken: boolean;
  tokenTtlMs: number;
  tokenEarlyMs: number;
  /** The purchase-token route requires a solved ALTCHA challenge (X-Seckill-Challenge). */
  requireChallenge: boolean;
  /** altcha-lib's `cost` for PBKDF2/SHA-256: iterations per attempt the solver makes. */
  challengeCost: number;
  challengeTtlMs: number;
  purchaseLockTtlMs: number;
  /** Stock buckets of a goods created without `stockShards`. */
  stockShards: number;
  /** How long an instance answers SOLD_OUT from memory after Redis said so; 0 = off. */
  soldOutMemoMs: number;
  /** How long after a sale's end an Idempotency-Key's answer is kept. */
  idempotencyRetentionMs: number;
  /** An order's payment deadline (`expireAt`), from its creation. */
  orderPaymentTimeoutMs: number;
  resultStream: StreamBoundsConfig;
}

/** An event stream's bounds: GET …/result/stream (RESULT_STREAM_*), …/queue/stream (QUEUE_STREAM_*). */
export interface StreamBoundsConfig {
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

export function readStreamBounds(env: Env, prefix: string): StreamBoundsConfig {
  return {
    maxPerUser: readInt(env, `${prefix}_MAX_PER_USER`, 2, 1, 100),
    maxPerIp: readInt(env, `${prefix}_MAX_PER_IP`, 100, 1, 1_000_000),
    maxPerInstance: readInt(env, `${prefix}_MAX_PER_INSTANCE`, 10_000, 1, 1_000_000),
    lifetimeMs: readInt(env, `${prefix}_LIFETIME_MS`, 600_000, 1_000, 86_400_000),
    heartbeatMs: readInt(env, `${prefix}_HEARTBEAT_MS`, 15_000, 1_000, 600_000),
  };
}

export const seckillConfig = configNamespace('seckill', (env): SeckillConfig => ({
  requireToken: readBool(env, 'SECKILL_REQUIRE_TOKEN', false),
  tokenTtlMs: readInt(env, 'SECKILL_TOKEN_TTL_MS', 60_000, 1_000, 3_600_000),
  tokenEarlyMs: readInt(env, 'SECKILL_TOKEN_EARLY_MS', 0, 0, 600_000),
  requireChallenge: readBool(env, 'SECKILL_REQUIRE_CHALLENGE', false),
  challengeCost: readInt(env, 'CHALLENGE_COST', 5_000, 1, 1_000_000),
  challengeTtlMs: readInt(env, 'CHALLENGE_TTL_MS', 120_000, 5_000, 3_600_000),
  purchaseLockTtlMs: readInt(env, 'PURCHASE_LOCK_TTL_MS', 5_000, 100, 60_000),
  stockShards: readInt(env, 'STOCK_SHARDS', 1, 1, MAX_STOCK_SHARDS),
  soldOutMemoMs: readInt(env, 'SOLD_OUT_MEMO_MS', 1_000, 0, 60_000),
  idempotencyRetentionMs: readInt(
    env,
    'IDEMPOTENCY_RETENTION_MS',
    3_600_000,
    60_000,
    30 * 86_400_000,
  ),
  orderPaymentTimeoutMs: readInt(env, 'ORDER_PAYMENT_TIMEOUT_MS', 900_000, 1_000, 2 ** 31 - 1),
  resultStream: readStreamBounds(env, 'RESULT_STREAM'),
}));
