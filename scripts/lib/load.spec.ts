import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLoad } from './load.js';

describe('runLoad', () => {
  let server: Server;
  let origin: string;
  /** Requests by path, and the connection each came on. */
  const seen: { path: string; socket: unknown }[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push({ path: request.url ?? '', socket: request.socket });
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
});
