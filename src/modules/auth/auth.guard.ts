import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ACCESS_KEY, type Access, type AuthenticatedRequest } from './auth.decorators.js';
import { AuthenticatorService } from './authenticator.service.js';

@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: AuthenticatorService,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const access =
      this.reflector.getAllAndOverride<Access>(ACCESS_KEY, [
        context.getHandler(),
        context.getClass(),
      ]) ?? 'user';
    if (access === 'public') return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    request.user = this.authenticator.authorize(
      access,
      request.authentication ?? this.authenticator.authenticate(request.headers.authorization),
    );
    return true;
  }
}
