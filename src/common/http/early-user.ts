import type { FastifyRequest } from 'fastify';

/**
 * The user the token hook (src/modules/auth/early-auth.hook.ts) found on this request, for the
 * early hooks after it (blocklist, sold-out memo, shedding): undefined when the route is public or
 * the token is bad (refused later, by the guard). Read structurally, so that those hooks do not
 * depend on the auth module.
 */
export function earlyUserId(request: FastifyRequest): number | undefined {
  const { authentication } = request as { authentication?: { userId?: unknown } };
  return typeof authentication?.userId === 'number' ? authentication.userId : undefined;
}
