import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { remembered } from '../../common/remembered.js';

/** The claims of a verified token; the ones the checks here read are typed. */
export interface JwtClaims {
  sub?: unknown;
  exp?: unknown;
  nbf?: unknown;
  iat?: unknown;
  role?: unknown;
  [claim: string]: unknown;
}

/**
 * Verifies an HS256 JWT (RFC 7519) with node:crypto: an HMAC-SHA256 over the first two parts and
 * two JSON parses. A general JWT library (jsonwebtoken, behind @nestjs/jwt) spends about 8 % of
 * the purchase route's CPU on this (`npm run bench -- --profile`), on generality that one pinned
 * algorithm does not need.
 *
 * Refused (null): a signature that is not this key's HMAC in canonical base64url; a header that
 * is not a JSON object naming `alg: HS256` (so `none` and RS/HS confusion are refused) or that
 * carries `crit` (no extension is understood here); a payload that is not a JSON object; `exp`,
 * `nbf` or `iat` present and not a number; a token expired, or not yet valid, by more than
 * `toleranceSeconds` (the same bounds as jsonwebtoken's `clockTolerance`).
 */
export function verifyHs256(
  token: string,
  key: KeyObject,
  toleranceSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): JwtClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [header, payload, signature] = parts as [string, string, string];
  const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest('base64url');
  // Compared as text: another spelling of the same bytes (non-zero padding bits) is refused.
  if (
    signature.length !== expected.length ||
    !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))
  ) {
    return null;
  }
  if (!acceptableHeader(header)) return null;
  const claims = jsonObject(payload);
  if (claims === null) return null;
  for (const time of [claims.exp, claims.nbf, claims.iat]) {
    if (time !== undefined && typeof time !== 'number') return null;
  }
  if (typeof claims.exp === 'number' && nowSeconds >= claims.exp + toleranceSeconds) return null;
  if (typeof claims.nbf === 'number' && claims.nbf > nowSeconds + toleranceSeconds) return null;
  return claims;
}

/**
 * Whether a header part is a JSON object naming `alg: HS256` and carrying no `crit`; judged once
 * per spelling, since an issuer writes every token with the same few.
 */
const acceptableHeader = remembered((header) => {
  const head = jsonObject(header);
  return head !== null && head.alg === 'HS256' && !('crit' in head);
}, 64);

function jsonObject(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
