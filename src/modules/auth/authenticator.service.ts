import { Injectable } from '@nestjs/common';
import { createSecretKey, type KeyObject } from 'node:crypto';
import { DomainError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { authConfig, type AuthConfig } from '../../config/auth.config.js';
import type { Access, Authentication, AuthUser } from './auth.decorators.js';
import { bearerCredentials } from './bearer.js';
import { verifyHs256, type JwtClaims } from './hs256.js';

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const USER_ID = /^[1-9][0-9]{0,15}$/;
/** Clock difference with the token issuer that is forgiven, in seconds. */
const CLOCK_TOLERANCE_SECONDS = 5;

/** Bearer tokens (HS256 JWTs) to users, and users to access decisions. */
@Injectable()
export class AuthenticatorService {
  private readonly maxAgeSeconds: number | null;
  private readonly key: KeyObject;

  constructor(@InjectConfig(authConfig) auth: AuthConfig) {
    this.maxAgeSeconds = auth.jwtMaxAgeSeconds;
    this.key = createSecretKey(Buffer.from(auth.jwtSecret, 'utf8'));
  }

  /** Verifies the bearer token of an Authorization header. Never throws: a refusal is returned. */
  authenticate(header: string | undefined): Authentication {
    const token = bearerCredentials(header);
    if (token === undefined || !JWT_SHAPE.test(token)) {
      return new DomainError('UNAUTHORIZED', 'A bearer token is required');
    }
    // The algorithm is pinned: `alg: none` and RS/HS confusion are refused by the verifier.
    const claims: JwtClaims | null = verifyHs256(token, this.key, CLOCK_TOLERANCE_SECONDS);
    if (claims === null) {
      return new DomainError('UNAUTHORIZED', 'The token is invalid or expired');
    }
    if (typeof claims.exp !== 'number') {
      return new DomainError('UNAUTHORIZED', 'The token has no expiry');
    }
    if (this.expiresTooLate(claims.exp, claims.iat)) {
      return new DomainError('UNAUTHORIZED', 'The token expires too far ahead');
    }
    const sub = typeof claims.sub === 'number' ? String(claims.sub) : claims.sub;
    if (typeof sub !== 'string' || !USER_ID.test(sub) || !Number.isSafeInteger(Number(sub))) {
      return new DomainError('UNAUTHORIZED', 'The token subject is not a user id');
    }
    return { userId: Number(sub), admin: claims.role === 'admin' };
  }

  /** The user, when `access` lets it in; otherwise throws the refusal (401 or 403). */
  authorize(access: Exclude<Access, 'public'>, authentication: Authentication): AuthUser {
    if (authentication instanceof DomainError) throw authentication;
    if (access === 'admin' && !authentication.admin) {
      throw new DomainError('FORBIDDEN', 'This route is for admins');
    }
    return authentication;
  }

  /** A stolen token that lives for years is a standing key: JWT_MAX_AGE_SECONDS caps it. */
  private expiresTooLate(exp: number, iat: unknown): boolean {
    if (this.maxAgeSeconds === null) return false;
    const aheadOfNow = exp - Date.now() / 1000 - CLOCK_TOLERANCE_SECONDS;
    const aheadOfIssue = typeof iat === 'number' ? exp - iat : 0;
    return Math.max(aheadOfNow, aheadOfIssue) > this.maxAgeSeconds;
  }
}
