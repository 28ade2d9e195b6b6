import { afterEach, describe, expect, it, vi } from 'vitest';
import { MetricsService, SCRAPE_READ_MS } from './metrics.service.js';

describe('MetricsService.scrape, the gauges read at scrape', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('should export what each collector read, and drop the series of a sale it no longer reads', async () => {
    const metrics = new MetricsService();
    let sales = [7, 8];
    metrics.collectOnScrape('backlog', [metrics.ordersUnwritten], () => {
      for (const goods of sales) metrics.ordersUnwritten.set({ goods: String(goods) }, goods);
    });
    expect(await metrics.scrape()).toContain('seckill_orders_unwritten{goods="8"} 8');
    sales = [7];
    const after = await metrics.scrape();
    expect(after).toContain('seckill_orders_unwritten{goods="7"} 7');
    expect(after).not.toContain('goods="8"');
  });

  it('should leave out, and count, a collector that fails or does not answer in time, and still export the others', async () => {
    vi.useFakeTimers();
    const metrics = new MetricsService();
    metrics.collectOnScrape('queues', [metrics.queueWaiting], async () => {
      metrics.queueWaiting.set({ goods: '1' }, 5);
      await new Promise(() => undefined);
    });
    metrics.collectOnScrape('backlog', [metrics.ordersUnwritten], () => {
      throw new Error('Redis down');
    });
    metrics.collectOnScrape('stores', [metrics.redisReady], () => {
      metrics.redisReady.set(1);
    });
    const scrape = metrics.scrape();
    await vi.advanceTimersByTimeAsync(SCRAPE_READ_MS);
    const text = await scrape;
    expect(text).toContain('seckill_redis_ready 1');
    expect(text).not.toContain('seckill_queue_waiting{');
    expect(text).toContain('seckill_scrape_read_failures_total{collector="queues"} 1');
    expect(text).toContain('seckill_scrape_read_failures_total{collector="backlog"} 1');
  });
});
