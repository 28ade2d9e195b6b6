import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants.js';
import type { FastifyInstance } from 'fastify';

/**
 * What a route tells the hooks that run before Nest sees a request (its Fastify route config):
 * who may call it (see the auth decorators) and its own body limit.
 */
export interface EdgeRouteConfig {
  access?: string;
  bodyLimit?: number;
  /** The sold-out memo may answer this route before Nest sees the request. */
  soldOutShortcut?: boolean;
  /** Shed with 503 OVERLOADED when the instance is past what it can answer in time. */
  sheddable?: boolean;
  /** A blocklisted user or client address is refused on this route before anything else. */
  blocklistChecked?: boolean;
  /** The handler gets the JSON body as its text, unparsed (a webhook's signature covers it). */
  rawBody?: boolean;
}

/**
 * Adds to a handler's Fastify route config. Nest hands the router one config object per handler
 * (`@RouteConfig()` replaces it whole), so each decorator merges its part in.
 */
export function edgeRouteConfig(part: EdgeRouteConfig): MethodDecorator {
  return (_target, _key, descriptor) => {
    const current = Reflect.getMetadata(
      FASTIFY_ROUTE_CONFIG_METADATA,
      descriptor.value as object,
    ) as EdgeRouteConfig | undefined;
    Reflect.defineMetadata(
      FASTIFY_ROUTE_CONFIG_METADATA,
      { ...current, ...part },
      descriptor.value as object,
    );
  };
}

/**
 * A body limit of the route's own, below the server's BODY_LIMIT_BYTES: a larger body is 413
 * (without being read when its Content-Length says so).
 */
export const BodyLimit = (bytes: number) => edgeRouteConfig({ bodyLimit: bytes });

/** The route's JSON body reaches its handler as the string sent, byte for byte. */
export const RawJsonBody = () => edgeRouteConfig({ rawBody: true });

/** Nest passes the router a route's config, not its options: the body limit is moved in here. */
export function applyRouteBodyLimits(fastify: FastifyInstance, serverLimit: number): void {
  fastify.addHook('onRoute', (route) => {
    const { bodyLimit } = (route.config ?? {}) as EdgeRouteConfig;
    if (bodyLimit !== undefined) route.bodyLimit = Math.min(bodyLimit, serverLimit);
  });
}
