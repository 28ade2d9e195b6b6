import { configNamespace } from './config-namespace.js';
import { readBool, readInt, type Env } from './env-readers.js';

export interface RateLimitConfig {
  throttle: ThrottleConfig;
  /** Throttled more than `threshold` times within the window: blocklisted. 0 = off. */
  autoban: { threshold: number; windowMs: number; banSeconds: number };
}

/** Requests per window; 0 turns that limit off. */
export interface ThrottleConfig {
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

function readThrottle(env: Env): ThrottleConfig {
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

export const rateLimitConfig = configNamespace('rateLimit', (env): RateLimitConfig => ({
  throttle: readThrottle(env),
  autoban: {
    threshold: readInt(env, 'AUTOBAN_THRESHOLD', 50, 0, 1_000_000),
    windowMs: readInt(env, 'AUTOBAN_WINDOW_SECONDS', 60, 1, 86_400) * 1000,
    banSeconds: readInt(env, 'AUTOBAN_SECONDS', 600, 1, 31_536_000),
  },
}));
