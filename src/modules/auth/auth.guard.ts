import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { JwtService } from '@nestjs/jwt';
import { DomainError } from '../../common/errors/domain-error.js';
import {
  ACCESS_KEY,
  type Access,
  type AuthenticatedRequest,
  type AuthUser,
} from './auth.decorators.js';

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;
const USER_ID = /^[1-9][0-9]{0,15}$/;

interface Claims {
  sub?: unknown;
  exp?: unknown;
  role?: unknown;
}

@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly jwt: JwtService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const access =
      this.reflector.getAllAndOverride<Access>(ACCESS_KEY, [
        context.getHandler(),
        context.getClass(),
      ]) ?? 'user';
    if (access === 'public') return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const user = await this.authenticate(request.headers.authorization);
    if (access === 'admin' && !user.admin) {
      throw new DomainError('FORBIDDEN', 'This route is for admins');
    }
    request.user = user;
    return true;
  }

  private async authenticate(header: string | undefined): Promise<AuthUser> {
    const token = header ? BEARER.exec(header)?.[1] : undefined;
    if (!token) throw new DomainError('UNAUTHORIZED', 'A bearer token is required');
    let claims: Claims;
    try {
      // The algorithm is pinned: `alg: none` and RS/HS confusion are refused by the verifier.
      claims = await this.jwt.verifyAsync<Claims>(token, {
        algorithms: ['HS256'],
        clockTolerance: 5,
      });
    } catch {
      throw new DomainError('UNAUTHORIZED', 'The token is invalid or expired');
    }
    if (typeof claims.exp !== 'number') {
      throw new DomainError('UNAUTHORIZED', 'The token has no expiry');
    }
    const sub = typeof claims.sub === 'number' ? String(claims.sub) : claims.sub;
    if (typeof sub !== 'string' || !USER_ID.test(sub) || !Number.isSafeInteger(Number(sub))) {
      throw new DomainError('UNAUTHORIZED', 'The token subject is not a user id');
    }
    return { userId: Number(sub), admin: claims.role === 'admin' };
  }
}
