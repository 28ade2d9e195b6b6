import { isIP } from 'node:net';
import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readBool, readInt, readList, type Env } from './env-readers.js';

export interface HttpConfig {
  port: number;
  trustedProxies: string[];
  bodyLimitBytes: number;
  /** A request's headers and body must arrive within this, or it is 408 and its connection closed. */
  requestTimeoutMs: number;
  /** Exact origins allowed by CORS; empty = CORS off (no Access-Control-* headers). */
  corsOrigins: string[];
  /** Off by default in production: the document maps every route, the admin ones included. */
  swaggerEnabled: boolean;
}

function readTrustedProxies(env: Env): string[] {
  const entries = readList(env, 'TRUSTED_PROXIES');
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

function readCorsOrigins(env: Env): string[] {
  const origins = readList(env, 'CORS_ORIGINS');
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

export const httpConfig = configNamespace('http', (env, app): HttpConfig => ({
  port: readInt(env, 'PORT', 3000, 0, 65535),
  trustedProxies: readTrustedProxies(env),
  bodyLimitBytes: readInt(env, 'BODY_LIMIT_BYTES', 1_048_576, 1_024, 100 * 1_048_576),
  requestTimeoutMs: readInt(env, 'REQUEST_TIMEOUT_MS', 10_000, 100, 600_000),
  corsOrigins: readCorsOrigins(env),
  // A worker serves no API, so it has nothing to document (and /docs would be a route more).
  swaggerEnabled:
    app.role !== 'worker' && readBool(env, 'SWAGGER_ENABLED', app.nodeEnv !== 'production'),
}));
