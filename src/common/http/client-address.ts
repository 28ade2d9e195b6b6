import { createParamDecorator, Logger, type ExecutionContext } from '@nestjs/common';
import { normalizeIp } from '@nestjs/throttler';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BlockList, isIPv6 } from 'node:net';
import { remembered } from '../remembered.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Who the request is from, as the blocklist and the per-address rate limits count it: an IPv4
     * address in dotted decimal, an IPv6 address by its /64 (`2001:db8:1:2::/64`), an IPv4-mapped
     * IPv6 address as its IPv4. Resolved once per request by `installClientAddress`.
     */
    clientAddress: string;
    /**
     * The client is a trusted proxy itself (in TRUSTED_PROXIES): a request it sent without
     * X-Forwarded-For, or with none it could read. Every buyer behind it then has this one
     * address, so it is never blocked by address, and such a request spends no per-address
     * budget: it is limited per user only. Resolved with `clientAddress`.
     */
    clientIsTrustedProxy: boolean;
  }
}

/** Longer than any address with its brackets and port: not one. */
const MAX_WRITTEN_LENGTH = 64;
const IPV4 = /^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$/;
const IPV4_WITH_PORT = /^([0-9.]+):([0-9]{1,5})$/;
const BRACKETED = /^\[([^\]]+)\](?::([0-9]{1,5}))?$/;
const EMBEDDED_IPV4 = /^(.*:)([0-9]*\.[0-9.]*)$/;

/** An identity for a request whose socket is already gone (no address to read). */
const NO_PEER = 'unknown';

/**
 * Dotted decimal, each octet 0..255. Leading zeros are read as decimal (`010.060.000.001` is
 * 10.60.0.1): no proxy writes octal, and reading them so makes every spelling of an address the
 * one identity. Hex, octal-prefixed, shortened (`10.1`) and integer forms are no address.
 */
function parseIpv4(written: string): string | null {
  const octets = IPV4.exec(written);
  if (!octets) return null;
  const values = octets.slice(1).map(Number);
  return values.every((value) => value <= 255) ? values.join('.') : null;
}

const validPort = (port: string | undefined) => port === undefined || Number(port) <= 65_535;

/**
 * An address as a socket or a proxy wrote it, in canonical form: its port and brackets dropped
 * (`10.0.0.1:5555`, `[2001:db8::1]:443`, `[10.0.0.1]`), an IPv6 zone dropped, an IPv4-mapped
 * IPv6 address folded into its IPv4, IPv6 compressed and lower-case. Null for anything that is
 * no address.
 */
export function parseAddress(written: string): string | null {
  let address = written.trim();
  if (address.length === 0 || address.length > MAX_WRITTEN_LENGTH) return null;
  const bracketed = BRACKETED.exec(address);
  if (bracketed) {
    if (!validPort(bracketed[2])) return null;
    address = bracketed[1];
  } else {
    const withPort = IPV4_WITH_PORT.exec(address);
    if (withPort) {
      if (!validPort(withPort[2])) return null;
      address = withPort[1];
    }
  }
  if (!address.includes(':')) return parseIpv4(address);
  const zone = address.indexOf('%');
  if (zone !== -1) address = address.slice(0, zone);
  // `::ffff:010.060.000.001`: its IPv4 part is read as an IPv4 address is.
  const embedded = EMBEDDED_IPV4.exec(address);
  if (embedded) {
    const ipv4 = parseIpv4(embedded[2]);
    if (ipv4 === null) return null;
    address = embedded[1] + ipv4;
  }
  if (!isIPv6(address)) return null;
  // The throttler's normaliser at full length: compressed, mapped IPv4 folded, `::1` kept.
  const canonical = normalizeIp(address, 128);
  return canonical.endsWith('/128') ? canonical.slice(0, -4) : canonical;
}

/** The identity of a canonical address: itself for IPv4, its /64 for IPv6. */
export function addressIdentity(address: string): string {
  return address.includes(':') ? normalizeIp(address) : address;
}

/**
 * Whether an address is one of TRUSTED_PROXIES (addresses or CIDRs, validated at boot), compared
 * in canonical form: a proxy written `::ffff:10.0.0.1`, or a peer seen so, is 10.0.0.1.
 */
export function trustedProxies(entries: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  const ipv4Subnets: { base: number; mask: number }[] = [];
  let anyIpv6 = false;
  for (const entry of entries) {
    const [written, bits] = entry.split('/');
    const address = parseAddress(written);
    if (address === null) throw new Error(`not an address: ${entry}`);
    const family = address.includes(':') ? 'ipv6' : 'ipv4';
    // A mapped IPv6 prefix (`::ffff:10.0.0.0/104`) counts its bits from the IPv4 part.
    const prefix =
      bits === undefined
        ? undefined
        : Math.max(
            family === 'ipv4' && written.includes(':') ? Number(bits) - 96 : Number(bits),
            0,
          );
    if (family === 'ipv4') {
      const mask =
        prefix === undefined || prefix >= 32 ? -1 : prefix === 0 ? 0 : -1 << (32 - prefix);
      ipv4Subnets.push({ base: ipv4Number(address) & mask, mask });
    } else {
      anyIpv6 = true;
      if (prefix === undefined) list.addAddress(address, family);
      else list.addSubnet(address, prefix, family);
    }
  }
  // Every request asks about its peer (on a keep-alive connection, the same one each time) and
  // the hops it walks: remembered, the answer costs a lookup. A new address (one per buyer behind
  // a load balancer) is matched as a number against the IPv4 entries; the BlockList (a
  // SocketAddress made per call) is asked only where IPv6 entries are listed, which match IPv4
  // addresses too (mapped).
  return remembered((written) => {
    const address = parseAddress(written);
    if (address === null) return false;
    const family = address.includes(':') ? 'ipv6' : 'ipv4';
    if (family === 'ipv4') {
      const value = ipv4Number(address);
      if (ipv4Subnets.some(({ base, mask }) => (value & mask) === base)) return true;
    }
    return anyIpv6 && list.check(address, family);
  });
}

/** A canonical IPv4 address as a 32-bit integer (signed, as JavaScript's bit operators give it). */
function ipv4Number(address: string): number {
  const [a, b, c, d] = address.split('.').map(Number);
  return (a << 24) | (b << 16) | (c << 8) | d | 0;
}

/** parseAddress of a socket's peer: the few a server sees (its proxies) are parsed once. */
const canonicalPeer = remembered(parseAddress);

export interface ResolvedClient {
  /** The client's identity (see `FastifyRequest.clientAddress`). */
  identity: string;
  /** The client is a trusted proxy (see `FastifyRequest.clientIsTrustedProxy`). */
  trustedProxy?: true;
  /** A forwarded value that was no address: the client is then the proxy that wrote it. */
  unreadable?: { value: string; proxy: string };
}

/**
 * The client of a request: the peer, or, when the peer is a trusted proxy, the nearest address in
 * X-Forwarded-For that is not one (walked from the right, as each proxy appends its peer). A
 * forwarded value that is no address is not a client of its own: the request is the proxy's that
 * wrote it, so that garbage or made-up forms never buy a fresh identity. A request that names no
 * client (no header, an empty one, only trusted hops, or garbage) is `trustedProxy`: its client is
 * the trusted proxy itself.
 */
export function resolveClient(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: ((address: string) => boolean) | null,
): ResolvedClient {
  let current = peer === undefined ? null : canonicalPeer(peer);
  if (current === null) return { identity: NO_PEER };
  if (trusted === null || !trusted(current)) return { identity: addressIdentity(current) };
  if (forwardedFor !== undefined) {
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let index = hops.length - 1; index >= 0; index--) {
      const hop = parseAddress(hops[index]);
      if (hop === null) {
        // An empty header (`X-Forwarded-For:`) names nobody; anything else written there is noise.
        if (hops.length === 1 && hops[0].trim() === '') break;
        return {
          identity: addressIdentity(current),
          trustedProxy: true,
          unreadable: { value: hops[index].trim(), proxy: current },
        };
      }
      current = hop;
      if (!trusted(hop)) return { identity: addressIdentity(hop) };
    }
  }
  // No client named, or only trusted hops: the request is a trusted proxy's own.
  return { identity: addressIdentity(current), trustedProxy: true };
}

/**
 * For the blocklist's writes: the TRUSTED_PROXIES entry an `ip` entry would cover, or null. An
 * entry is a client identity (an IPv4 address, or an IPv6 /64), and it covers a proxy entry when
 * a request from an address of that entry could have this identity: an IPv4 address that entry
 * trusts, or a /64 that overlaps it (containing the proxy, or inside a shorter trusted prefix).
 */
export function trustedProxyCovered(
  entries: readonly string[],
): (identity: string) => string | null {
  const each = entries.map((entry) => {
    const [written, bits] = entry.split('/');
    const address = parseAddress(written);
    return {
      entry,
      trusts: trustedProxies([entry]),
      // An IPv6 entry narrower than a /64 lies inside the one /64 of its address.
      within64:
        address !== null && address.includes(':') && (bits === undefined || Number(bits) > 64)
          ? addressIdentity(address)
          : null,
    };
  });
  return (identity) => {
    const ipv6 = identity.endsWith('/64');
    const base = ipv6 ? identity.slice(0, -3) : identity;
    // An IPv4 client is covered exactly when the requests' own verdict trusts it.
    const found = each.find(({ trusts, within64 }) =>
      ipv6 && within64 !== null ? within64 === identity : trusts(base),
    );
    return found?.entry ?? null;
  };
}

const UNREADABLE_LOG_EVERY_MS = 10_000;

/**
 * Resolves every request's client address once, first thing, into `request.clientAddress`: the
 * blocklist, the rate limits and the autoban all read it, never the header or `request.ip`.
 * Fastify is given the same trust (its `trustProxy`), for what it derives from forwarded headers.
 */
export function installClientAddress(
  fastify: FastifyInstance,
  trusted: ((address: string) => boolean) | null,
): void {
  const logger = new Logger('ClientAddress');
  let loggedAt = 0;
  let unlogged = 0;
  fastify.decorateRequest('clientAddress', NO_PEER);
  fastify.decorateRequest('clientIsTrustedProxy', false);
  fastify.addHook('onRequest', (request, _reply, done) => {
    const client = resolveClient(
      request.raw.socket?.remoteAddress,
      request.headers['x-forwarded-for'],
      trusted,
    );
    request.clientAddress = client.identity;
    request.clientIsTrustedProxy = client.trustedProxy === true;
    if (client.unreadable) {
      // A line at most every 10 s: whoever sends garbage must not be able to flood the logs.
      const now = Date.now();
      if (now - loggedAt < UNREADABLE_LOG_EVERY_MS) {
        unlogged++;
      } else {
        logger.warn(
          `forwarded client address unreadable, counted as its proxy's: proxy=${client.unreadable.proxy} value=${JSON.stringify(client.unreadable.value.slice(0, MAX_WRITTEN_LENGTH))} unlogged=${unlogged}`,
        );
        loggedAt = now;
        unlogged = 0;
      }
    }
    done();
  });
}

/**
 * The address a request's per-address counters count (`FastifyRequest.clientAddress`), or null
 * for a trusted proxy's own request, which is counted per user only: on the proxy's address it
 * would share one budget with every buyer behind the proxy.
 */
export function countedAddress(request: FastifyRequest): string | null {
  return request.clientIsTrustedProxy ? null : request.clientAddress;
}

/** The request's `countedAddress`: its client address, or null for a trusted proxy's own. */
export const CountedAddress = createParamDecorator((_: unknown, context: ExecutionContext) =>
  countedAddress(context.switchToHttp().getRequest<FastifyRequest>()),
);
