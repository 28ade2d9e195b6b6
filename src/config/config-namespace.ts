import { Inject } from '@nestjs/common';
import { getConfigToken } from '@nestjs/config';
import type { AppSection } from './app-section.js';
import type { Env } from './env-readers.js';

/**
 * One section of the configuration: its key in AppConfig (and in ConfigService), its injection
 * token, and how it reads and validates its own variables. Unlike a registerAs factory it is
 * handed the environment (createApp's, not always process.env) and the `app` section, which
 * some settings depend on (production refuses a few).
 */
export interface ConfigNamespace<K extends string, T> {
  readonly key: K;
  /** The token registerAs(key) would give it, so that ConfigModule provides it under this. */
  readonly KEY: string;
  read(env: Env, app: AppSection): T;
}

export function configNamespace<K extends string, T>(
  key: K,
  read: (env: Env, app: AppSection) => T,
): ConfigNamespace<K, T> {
  return { key, KEY: getConfigToken(key), read };
}

/** Injects one validated section: `@InjectConfig(redisConfig) redis: RedisConfig`. */
export const InjectConfig = (namespace: ConfigNamespace<string, unknown>) => Inject(namespace.KEY);
