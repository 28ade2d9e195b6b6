import type { onRequestHookHandler } from 'fastify';
import { bodyStillComing } from '../../common/http/body-coming.js';
import { countedAddress } from '../../common/http/client-address.js';
import { earlyUserId } from '../../common/http/early-user.js';
import { edgeRouteConfig, type EdgeRouteConfig } from '../../common/http/route-config.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import type { BlocklistService } from './blocklist.service.js';

/** Marks a route the blocklist is checked on, before anything else (purchase, token, challenge). */
export const BlocklistChecked = () => edgeRouteConfig({ blocklistChecked: true });

const BLOCKED_BODY = JSON.stringify({
  statusCode: 403,
  code: 'FORBIDDEN',
  message: 'This user or client address is blocked',
});

/**
 * Refuses a blocklisted user or client address on the routes that ask for it, right after the
 * token hook (which identified the user) and before the sold-out memo, the rate limits or any
 * store is touched. The check is the instance's in-memory copy of the blocklist: no Redis call.
 */
export function refuseBlocked(
  blocklist: BlocklistService,
  metrics: MetricsService,
): onRequestHookHandler {
  return (request, reply, done) => {
    if ((request.routeOptions.config as EdgeRouteConfig).blocklistChecked !== true) return done();
    const blocked = blocklist.blockedAs(earlyUserId(request), countedAddress(request));
    if (blocked === null) return done();
    metrics.blocked.inc({ type: blocked });
    if (bodyStillComing(request.raw)) void reply.header('Connection', 'close');
    void reply.code(403).type('application/json; charset=utf-8').send(BLOCKED_BODY);
  };
}
