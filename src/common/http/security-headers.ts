import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

const HELMET_OPTIONS: HelmetOptions = {
  // Swagger UI's own stylesheet and init script are the only non-JSON pages served.
  contentSecurityPolicy: {
    directives: {
      defaultSrc: [`'self'`],
      styleSrc: [`'self'`, `'unsafe-inline'`],
      imgSrc: [`'self'`, 'data:', 'validator.swagger.io'],
      scriptSrc: [`'self'`, `'unsafe-inline'`],
      // Nothing served here is meant to be framed (the dashboard's own policy says 'none' too).
      frameAncestors: [`'none'`],
    },
  },
  // The same in the older header: SAMEORIGIN beside frame-ancestors 'none' told browsers two things.
  frameguard: { action: 'deny' },
};

/** The headers helmet's middleware sets on a response with these options (it sets no others). */
function helmetHeaders(options: HelmetOptions): ReadonlyArray<readonly [string, string]> {
  const headers = new Map<string, string>();
  const recorder = {
    setHeader: (name: string, value: unknown) => headers.set(name, String(value)),
    removeHeader: (name: string) => headers.delete(name),
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => undefined);
  return [...headers];
}

/**
 * Every answer carries these, whichever layer gives it: the app's (a request hook), the router's
 * (bad URL, over-long path segment) and those written straight to the socket (timeouts, header
 * overflow, malformed HTTP), which no hook sees. Worked out once: the options never change per
 * request, and rebuilding helmet's middleware on each one (what @fastify/helmet does) cost the
 * purchase route for nothing.
 */
export const SECURITY_HEADERS = helmetHeaders(HELMET_OPTIONS);

export function setSecurityHeaders(response: ServerResponse): void {
  for (const [name, value] of SECURITY_HEADERS) response.setHeader(name, value);
}
