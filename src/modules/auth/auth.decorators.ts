import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

export interface AuthUser {
  userId: number;
  admin: boolean;
}

export const ACCESS_KEY = 'seckill:access';
export type Access = 'public' | 'user' | 'admin';

/** Routes are closed by default: a route must say who may call it. */
export const Public = () => SetMetadata(ACCESS_KEY, 'public' satisfies Access);
export const AdminOnly = () => SetMetadata(ACCESS_KEY, 'admin' satisfies Access);

export type AuthenticatedRequest = FastifyRequest & { user?: AuthUser };

/** The user id comes from the verified token only, never from a body, path or query. */
export const CurrentUser = createParamDecorator((_: unknown, context: ExecutionContext) => {
  return context.switchToHttp().getRequest<AuthenticatedRequest>().user!;
});
