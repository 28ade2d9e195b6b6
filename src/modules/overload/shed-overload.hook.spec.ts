import Fastify from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { EdgeRouteConfig } from '../../common/http/route-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { LoadMonitorService } from './load-monitor.service.js';
import { shedWhenOverloaded } from './shed-overload.hook.js';

const sheddable: { config: EdgeRouteConfig } = { config: { sheddable: true } };

/** A server whose sheddable route answers once the test lets it, and a route that is not sheddable. */
async function server(maxInFlight: number) {
  const metrics = new MetricsService();
  const monitor = new LoadMonitorService(
    {
      maxInFlight,
      latencyTargetMs: 0,
      maxEventLoopDelayMs: 0,
      maxConfirmWaitMs: 0,
      retryAfterSeconds: 1,
      retryAfterMaxSeconds: 30,
      retryShare: 0.1,
    },
    metrics,
  );
  const app = Fastify({ forceCloseConnections: true });
  app.addHook('onRequest', shedWhenOverloaded(monitor));
  const gates: (() => void)[] = [];
  let handled = 0;
  app.post('/buy/:goodsId', sheddable, async (_request, reply) => {
    handled++;
    await new Promise<void>((resolve) => gates.push(resolve));
    return reply.code(202).send({ status: 'QUEUED' });
  });
  app.get('/health', async () => ({ status: 'ok' }));
  const origin = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, origin, monitor, gates, handled: () => handled };
}

async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('shedWhenOverloaded', () => {
  afterEach(() => vi.restoreAllMocks());

  it('should shed a purchase past the bound at once with 503 OVERLOADED and Retry-After, without running its handler, while other routes answer', async () => {
    const { app, origin, monitor, gates, handled } = await server(1);
    try {
      const first = fetch(`${origin}/buy/1`, { method: 'POST' });
      await waitFor(() => handled() === 1);

      const shed = await fetch(`${origin}/buy/1`, { method: 'POST' });
      expect(shed.status).toBe(503);
      expect(Number(shed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await shed.json()).toEqual({
        statusCode: 503,
        code: 'OVERLOADED',
        message: expect.stringContaining('nothing was taken'),
      });
      expect(handled()).toBe(1);
      expect((await fetch(`${origin}/health`)).status).toBe(200);

      gates.shift()?.();
      expect((await first).status).toBe(202);
      await waitFor(() => monitor.purchasesInProgress() === 0);
      const next = fetch(`${origin}/buy/1`, { method: 'POST' });
      await waitFor(() => handled() === 2);
      gates.shift()?.();
      expect((await next).status).toBe(202);
    } finally {
      for (const open of gates) open();
      await app.close();
    }
  });

  it('should count a purchase whose client went away as no longer in progress', async () => {
    const { app, origin, monitor, gates, handled } = await server(1);
    try {
      const abort = new AbortController();
      const gone = fetch(`${origin}/buy/1`, { method: 'POST', signal: abort.signal }).catch(
        () => 'aborted',
      );
      await waitFor(() => handled() === 1);
      expect(monitor.purchasesInProgress()).toBe(1);
      abort.abort();
      expect(await gone).toBe('aborted');
      await waitFor(() => monitor.purchasesInProgress() === 0);
    } finally {
      for (const open of gates) open();
      await app.close();
    }
  });
});
