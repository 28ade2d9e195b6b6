import {
  applyDecorators,
  createParamDecorator,
  ExecutionContext,
  SetMetadata,
} from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { edgeRouteConfig } from '../../common/http/route-config.js';
import type { DomainError } from '../../common/errors/domain-error.js';

export interface AuthUser {
  userId: number;
  admin: boolean;
}

/** What a request's Authorization header proved: a user, or the refusal to answer with. */
export type Authentication = AuthUser | DomainError;

export const ACCESS_KEY = 'seckill:access';
export type Access = 'public' | 'user' | 'admin';

/**
 * Routes are closed by default (a user route): a route must say if it is open or for admins. Both
 * the guard (Nest metadata) and the request hook that runs before the body is read (the route's
 * Fastify config) read it, so these go on handlers, not on controller classes.
 */
const access = (who: Access): MethodDecorator =>
  applyDecorators(SetMetadata(ACCESS_KEY, who), edgeRouteConfig({ access: who }));
export const Public = () => access('public');
export const AdminOnly = () => access('admin');

export type AuthenticatedRequest = FastifyRequest & {
  user?: AuthUser;
  /** The bearer token's verdict, reached once, before the body was read (see early-auth.hook). */
  authentication?: Authentication;
};

/** The user id comes from the verified token only, never from a body, path or query. */
export const CurrentUser = createParamDecorator((_: unknown, context: ExecutionContext) => {
  return context.switchToHttp().getRequest<AuthenticatedRequest>().user!;
});
