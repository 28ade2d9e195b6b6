import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLoad } from './load.js';

describe('runLoad', () => {
  let server: Server;
  let origin: string;
  /** Requests by path, and the connection each came on. */
  const seen: { path: string; socket: unknown }[] = [];
  const shedOnce = new Set<string>();

  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push({ path: request.url ?? '', socket: request.socket });
      // /shed/N: the first time, 503 with a Retry-After of 0 s (asked again at once).
      if (request.url?.startsWith('/shed/') && !shedOnce.has(request.url)) {
        shedOnce.add(request.url);
        response.writeHead(503, { 'Retry-After': '0' });
      }
      response.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('should open every lane with the warm-up request before the clock, and record only the load', async () => {
    const run = await runLoad({
      origin,
      connections: 3,
      durationMs: 100,
      ownConnections: true,
      warmUp: { method: 'GET', path: '/warm', headers: {} },
      next: () => ({ method: 'POST', path: '/buy', headers: {} }),
    });
    const warm = seen.filter((request) => request.path === '/warm');
    const load = seen.filter((request) => request.path === '/buy');
    expect(warm).toHaveLength(3);
    expect(seen.slice(0, 3).every((request) => request.path === '/warm')).toBe(true);
    expect(run.results).toHaveLength(load.length);
    // The load rides on the connections the warm-up opened.
    const warmed = new Set(warm.map((request) => request.socket));
    expect(load.every((request) => warmed.has(request.socket))).toBe(true);
  });

  it('should send the same request again after a Retry-After with retrySame, and the next without', async () => {
    const paths = async (retrySame: boolean, from: number) => {
      let n = from;
      const run = await runLoad({
        origin,
        connections: 1,
        honorRetryAfter: true,
        retrySame,
        next: () =>
          n < from + 3 ? { method: 'POST', path: `/shed/${n++}`, headers: {} } : undefined,
      });
      return run.results.map((result) => result.status);
    };
    // Each shed once, then sent again: 503, 200 for each of the three.
    expect(await paths(true, 0)).toEqual([503, 200, 503, 200, 503, 200]);
    // Each shed once and never sent again.
    expect(await paths(false, 10)).toEqual([503, 503, 503]);
  });
});
