// Load generation shared by the demo and the bench: a fixed number of lanes (one keep-alive
// connection each) taking requests from one source until it runs dry or the time is up.
import { setTimeout as sleep } from 'node:timers/promises';

import { Client, Pool } from 'undici';

import { isRecord } from './http.js';
import { signToken } from './jwt.js';

export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
}

export interface LoadResult {
  /** 0 when no answer came (connection refused, reset, timeout). */
  status: number;
  /** The error body's `code`, or the network error's, when not 2xx. */
  code: string | undefined;
  latencyMs: number;
  /** When the answer came, in ms since the load started. */
  at: number;
  /** A 429's or 503's Retry-After, in ms, when it had one in seconds. */
  retryAfterMs?: number;
}

export interface LoadRun {
  results: LoadResult[];
  startedAt: number;
  endedAt: number;
  elapsedMs: number;
}

export interface LoadOptions {
  origin: string;
  connections: number;
  /** The next request to send, or undefined when there is none left. */
  next: (index: number) => LoadRequest | undefined;
  /** Stop taking new requests after this long (those in flight are still awaited). */
  durationMs?: number;
  timeoutMs?: number;
  /**
   * A lane that is told Retry-After (429, 503) waits that long before its next request, as a
   * person at the buyer's page does; a script that ignores it sends the next one at once.
   */
  honorRetryAfter?: boolean;
  /**
   * With honorRetryAfter: after the wait, the lane sends the same request again (the same buyer
   * trying again, as a person does) rather than the next.
   */
  retrySame?: boolean;
  /**
   * Each lane on a connection of its own (one client each), rather than every lane taking
   * whichever connection of the pool is free: a server that holds one client's connection then
   * delays that client alone.
   */
  ownConnections?: boolean;
  /**
   * Sent once by every lane before the clock starts (not recorded): each lane's connection is
   * open when the load begins, so that a connection storm (SYNs past the listen backlog, retried
   * after 1 s and 3 s) is not read as the service's latency.
   */
  warmUp?: LoadRequest;
  onResult?: (result: LoadResult, request: LoadRequest) => void;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export function errorCode(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    return isRecord(body) && typeof body.code === 'string' ? body.code : undefined;
  } catch {
    return undefined;
  }
}

export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  // undici's own errors carry UND_ERR_*; the socket's (ECONNREFUSED, …) hide in `cause`.
  const cause = error.cause;
  if (isRecord(cause) && typeof cause.code === 'string') return cause.code;
  if (typeof code === 'string') return code.replace(/^UND_ERR_/, '');
  return error.name === 'TimeoutError' ? 'TIMEOUT' : error.message;
}

export async function runLoad(options: LoadOptions): Promise<LoadRun> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const settings = { pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs };
  const pool = new Pool(options.origin, { ...settings, connections: options.connections });
  const clients =
    options.ownConnections === true
      ? Array.from({ length: options.connections }, () => new Client(options.origin, settings))
      : [];
  const results: LoadResult[] = [];
  const warmUp = options.warmUp;
  if (warmUp !== undefined) {
    await Promise.all(
      Array.from({ length: options.connections }, async (_, lane) => {
        const response = await (clients[lane] ?? pool).request({
          method: warmUp.method,
          path: warmUp.path,
          headers: warmUp.headers,
        });
        await response.body.dump();
      }),
    );
  }
  const startedAt = performance.now();
  const stopAt = options.durationMs === undefined ? Infinity : startedAt + options.durationMs;
  let index = 0;

  const send = async (request: LoadRequest, lane: number): Promise<LoadResult> => {
    const sent = performance.now();
    let status = 0;
    let code: string | undefined;
    let retryAfterMs: number | undefined;
    try {
      const response = await (clients[lane] ?? pool).request({
        method: request.method,
        path: request.path,
        headers: request.headers,
      });
      status = response.statusCode;
      const text = await response.body.text();
      if (status >= 300) code = errorCode(text);
      const retryAfter = response.headers['retry-after'];
      if ((status === 429 || status === 503) && typeof retryAfter === 'string') {
        const seconds = Number(retryAfter);
        if (Number.isFinite(seconds) && seconds >= 0) retryAfterMs = seconds * 1000;
      }
    } catch (error) {
      code = describeError(error);
    }
    const now = performance.now();
    return { status, code, latencyMs: now - sent, at: now - startedAt, retryAfterMs };
  };

  // Lanes share `index`, so each request is handed out exactly once, in order.
  const lane = async (_: unknown, laneIndex: number): Promise<void> => {
    let again: LoadRequest | undefined;
    while (performance.now() < stopAt) {
      const request = again ?? options.next(index++);
      again = undefined;
      if (request === undefined) return;
      const result = await send(request, laneIndex);
      results.push(result);
      options.onResult?.(result, request);
      if (options.honorRetryAfter === true && result.retryAfterMs !== undefined) {
        const wait = Math.min(result.retryAfterMs, stopAt - performance.now());
        if (wait > 0) await sleep(wait);
        if (options.retrySame === true) again = request;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: options.connections }, lane));
  } finally {
    await Promise.all([pool.close(), ...clients.map((client) => client.close())]);
  }
  const endedAt = performance.now();
  return { results, startedAt, endedAt, elapsedMs: endedAt - startedAt };
}

/** 10.a.b.c from the buyer index, skipping 10.0.0.0 so every address looks like a host. */
export function buyerAddress(index: number): string {
  const n = index + 1;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

/** Buyer addresses are 10.0.0.1 .. 10.255.255.254, one per buyer. */
export const MAX_BUYERS = 2 ** 24 - 2;

/**
 * The headers of a buyer: a token of its own and an address of its own, so that neither the
 * per-user nor the per-IP limit of a server trusting 127.0.0.1 as a proxy lumps buyers together.
 */
export function buyerHeaders(
  userId: number,
  index: number,
  secret?: string,
): Record<string, string> {
  return {
    authorization: `Bearer ${signToken({ userId, secret })}`,
    'x-forwarded-for': buyerAddress(index % MAX_BUYERS),
  };
}
