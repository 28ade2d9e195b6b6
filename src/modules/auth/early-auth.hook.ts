import type { onRequestHookHandler } from 'fastify';
import { bodyStillComing } from '../../common/http/body-coming.js';
import type { EdgeRouteConfig } from '../../common/http/route-config.js';
import type { Access, AuthenticatedRequest } from './auth.decorators.js';
import type { AuthenticatorService } from './authenticator.service.js';

/**
 * Fastify reads and buffers a body before Nest's guards run, so an anonymous client could make
 * the server hold a body per connection for nothing. This hook verifies the bearer token as soon
 * as the headers are in and keeps the verdict on the request for the AuthGuard (the token is
 * verified once). A request that will be refused and has a body coming is refused here, unread;
 * one without a body is left to the guard, as are routes that are not Nest's (Swagger's pages).
 */
export function authenticateBeforeBody(authenticator: AuthenticatorService): onRequestHookHandler {
  return (request, _reply, done) => {
    const access = (request.routeOptions.config as EdgeRouteConfig).access as Access | undefined;
    if (request.is404 || access === 'public') return done();
    const authentication = authenticator.authenticate(request.headers.authorization);
    (request as AuthenticatedRequest).authentication = authentication;
    if (bodyStillComing(request.raw)) {
      try {
        authenticator.authorize(access ?? 'user', authentication);
      } catch (refusal) {
        return done(refusal as Error);
      }
    }
    done();
  };
}
