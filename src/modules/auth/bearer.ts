import { createHash, timingSafeEqual } from 'node:crypto';

// The scheme is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are the same header.
const BEARER = /^Bearer +([\x21-\x7e]+)$/i;

/** The credentials of an `Authorization: Bearer <credentials>` header, if it is one. */
export function bearerCredentials(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/**
 * Compares a presented secret with the expected one in constant time. Both are hashed first, so
 * neither the content nor the length of the expected secret shows in the timing.
 */
export function secretMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
