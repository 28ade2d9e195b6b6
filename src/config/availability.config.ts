import { configNamespace } from './config-namespace.js';
import { readInt, readOneOf } from './env-readers.js';

export const REDIS_DOWN_MODES = ['database', 'closed'] as const;
export type RedisDownMode = (typeof REDIS_DOWN_MODES)[number];

/** What happens to purchases while Redis cannot decide them. */
export interface AvailabilityConfig {
  /** `database`: while Redis is unreachable or rebuilt, MySQL alone decides purchases; `closed`: 503. */
  redisDownMode: RedisDownMode;
  /** Database-mode purchases at once on this instance; more are 503 without touching MySQL. */
  fallbackMaxInflight: number;
}

export const availabilityConfig = configNamespace('availability', (env): AvailabilityConfig => ({
  redisDownMode: readOneOf(env, 'REDIS_DOWN_MODE', REDIS_DOWN_MODES, 'database'),
  fallbackMaxInflight: readInt(env, 'FALLBACK_MAX_INFLIGHT', 32, 1, 10_000),
}));
