import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AnswerHistogram } from './answer-histogram.js';
import { HTTP_DURATION_BUCKETS } from './metrics.service.js';

const NAME = 'answers_seconds';

describe('AnswerHistogram', () => {
  it("should expose exactly what prom-client's histogram exposes for the same answers", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const histogram = new AnswerHistogram(NAME, 'help', HTTP_DURATION_BUCKETS, ours);
    const reference = new Histogram({
      name: NAME,
      help: 'help',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_DURATION_BUCKETS,
      registers: [theirs],
    });
    const answers: [string, string, number, number][] = [
      ['POST', '/api/v1/seckill/:goodsId', 409, 0],
      ['POST', '/api/v1/seckill/:goodsId', 409, 0.001], // on a bound: that bucket's
      ['POST', '/api/v1/seckill/:goodsId', 409, 0.0011],
      ['POST', '/api/v1/seckill/:goodsId', 202, 0.07],
      ['GET', '/api/v1/seckill/:goodsId/result', 200, 10],
      ['GET', 'unmatched', 404, 11], // past the last bound: +Inf only
      ['POST', '/api/v1/seckill/:goodsId', 409, 0.3],
    ];
    for (const [method, route, status, seconds] of answers) {
      histogram.observe(method, route, status, seconds);
      reference.observe({ method, route, status: String(status) }, seconds);
    }
    const lines = async (registry: Registry) => (await registry.metrics()).split('\n').sort();
    expect(await lines(ours)).toEqual(await lines(theirs));
    expect(await ours.metrics()).toContain(
      `${NAME}_bucket{le="+Inf",method="GET",route="unmatched",status="404"} 1`,
    );
  });

  it('should start again from nothing when the registry is reset', async () => {
    const registry = new Registry();
    const histogram = new AnswerHistogram(NAME, 'help', [0.1, 1], registry);
    histogram.observe('GET', '/x', 200, 0.5);
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain(`${NAME}_count`);
  });
});
