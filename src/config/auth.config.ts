import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readOptionalInt, readString, type Env } from './env-readers.js';

export const DEV_JWT_SECRET = 'dev-insecure-jwt-secret-change-me';

export interface AuthConfig {
  jwtSecret: string;
  /** The public development secret is in use (createApp warns; production refuses it). */
  jwtSecretIsDefault: boolean;
  /** When set, tokens whose `exp` is further ahead than this (from now or from `iat`) are refused. */
  jwtMaxAgeSeconds: number | null;
  /** When set, /metrics requires it as a bearer token. */
  metricsToken: string | null;
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

export const authConfig = configNamespace('auth', (env, app): AuthConfig => {
  const jwtSecret = readString(env, 'JWT_SECRET', DEV_JWT_SECRET);
  const jwtSecretIsDefault = jwtSecret === DEV_JWT_SECRET;
  if (jwtSecretIsDefault && app.nodeEnv === 'production') {
    throw new ConfigValidationError('JWT_SECRET must be set in production (the default is public)');
  }
  return {
    jwtSecret,
    jwtSecretIsDefault,
    jwtMaxAgeSeconds: readOptionalInt(env, 'JWT_MAX_AGE_SECONDS', 1, 10 * 365 * 86_400),
    metricsToken: readMetricsToken(env),
  };
});
