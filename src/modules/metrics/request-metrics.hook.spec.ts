import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

import { MetricsService } from './metrics.service.js';
import { installRequestMetrics } from './request-metrics.hook.js';

/** The histogram's `_count` series, each as `labels -> count`. */
async function counts(metrics: MetricsService): Promise<Record<string, number>> {
  const metric = await metrics.httpDuration.get();
  return Object.fromEntries(
    metric.values
      .filter((value) => value.metricName === 'seckill_http_request_duration_seconds_count')
      .map((value) => [
        `${value.labels.method} ${value.labels.route} ${value.labels.status}`,
        value.value,
      ]),
  );
}

describe('installRequestMetrics', () => {
  it('times every answer by route pattern and status, an unmatched path under one label', async () => {
    const app = Fastify();
    const metrics = new MetricsService();
    installRequestMetrics(app, metrics);
    app.get('/goods/:goodsId', async () => ({ ok: true }));
    app.post('/buy/:goodsId', async (_request, reply) =>
      reply.code(409).send({ code: 'SOLD_OUT' }),
    );
    // An answer given by a hook, before any handler, is timed as the route's.
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-refuse'] !== undefined) await reply.code(403).send({});
    });

    for (const path of ['/goods/1', '/goods/2', '/goods/3']) {
      expect((await app.inject({ method: 'GET', url: path })).statusCode).toBe(200);
    }
    expect((await app.inject({ method: 'POST', url: '/buy/7' })).statusCode).toBe(409);
    expect(
      (await app.inject({ method: 'GET', url: '/goods/4', headers: { 'x-refuse': '1' } }))
        .statusCode,
    ).toBe(403);
    expect((await app.inject({ method: 'GET', url: '/no/such/path/123' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/another/456' })).statusCode).toBe(404);

    expect(await counts(metrics)).toEqual({
      'GET /goods/:goodsId 200': 3,
      'POST /buy/:goodsId 409': 1,
      'GET /goods/:goodsId 403': 1,
      'GET unmatched 404': 2,
    });
    const exposition = await metrics.registry.metrics();
    expect(exposition).toContain(
      'seckill_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/goods/:goodsId",status="200"}',
    );
    expect(exposition).toContain('le="10",method="GET",route="unmatched",status="404"');
    expect(exposition).not.toMatch(/route="\/(goods\/\d|no\/such)/);
    await app.close();
  });
});
