import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';

/** Must match the server's fallback so tokens work against a dev server started without JWT_SECRET. */
export const DEV_JWT_SECRET = 'dev-insecure-jwt-secret-change-me';

const DEFAULT_TTL_SECONDS = 3600;

export interface SignTokenOptions {
  userId: number;
  admin?: boolean | undefined;
  ttlSeconds?: number | undefined;
  secret?: string | undefined;
}

interface JwtClaims {
  sub: string;
  iat: number;
  exp: number;
  role?: 'admin';
}

function base64UrlJson(value: object): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function resolveSecret(explicit: string | undefined): string {
  // An empty JWT_SECRET is treated as unset, the same as a missing one.
  return explicit ?? (process.env.JWT_SECRET || DEV_JWT_SECRET);
}

function assertPositiveInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
}

export function signToken(options: SignTokenOptions): string {
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_TTL_SECONDS;
  assertPositiveInteger('userId', options.userId);
  assertPositiveInteger('ttlSeconds', ttlSeconds);

  const iat = Math.floor(Date.now() / 1000);
  const claims: JwtClaims = { sub: String(options.userId), iat, exp: iat + ttlSeconds };
  if (options.admin) claims.role = 'admin';

  const signingInput = `${base64UrlJson({ alg: 'HS256', typ: 'JWT' })}.${base64UrlJson(claims)}`;
  const signature = createHmac('sha256', resolveSecret(options.secret))
    .update(signingInput)
    .digest('base64url');
  return `${signingInput}.${signature}`;
}

/** Reads ./.env so the scripts see the same JWT_SECRET / DATABASE_URL as the server; variables already set win. */
export function loadDotEnv(): void {
  if (existsSync('.env')) process.loadEnvFile('.env');
}
