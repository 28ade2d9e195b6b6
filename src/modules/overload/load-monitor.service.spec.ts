import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { OverloadConfig } from '../../config/overload.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  LOOP_SAMPLE_MS,
  LoadMonitorService,
  SHED_LOG_INTERVAL_MS,
} from './load-monitor.service.js';

const BOUNDS: OverloadConfig = {
  maxInFlight: 2,
  maxEventLoopDelayMs: 100,
  maxConfirmWaitMs: 1_000,
  retryAfterSeconds: 1,
};

function monitor(config: Partial<OverloadConfig> = {}) {
  const metrics = new MetricsService();
  return { load: new LoadMonitorService({ ...BOUNDS, ...config }, metrics), metrics };
}

async function shedCounts(metrics: MetricsService): Promise<Record<string, number>> {
  const metric = await metrics.purchasesShed.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.reason), v.value]));
}

describe('LoadMonitorService', () => {
  afterEach(() => vi.restoreAllMocks());

  it('should take purchases up to the in-flight bound, shed the next, and take one again once one is answered', () => {
    const { load } = monitor();
    const now = performance.now();
    expect(load.admit(now)).toBeNull();
    expect(load.admit(now)).toBeNull();
    expect(load.admit(now)).toBe('in_flight');
    expect(load.purchasesInProgress()).toBe(2);
    load.leave();
    expect(load.admit(now)).toBeNull();
    expect(load.purchasesInProgress()).toBe(2);
  });

  it('should shed while the last timer ran later than the bound, and while the loop is late now', () => {
    const { load } = monitor();
    const start = performance.now();
    load.tick(start);
    load.tick(start + LOOP_SAMPLE_MS + 150);
    expect(load.admit(start + LOOP_SAMPLE_MS + 150)).toBe('event_loop');
    load.tick(start + 2 * LOOP_SAMPLE_MS + 150);
    expect(load.admit(start + 2 * LOOP_SAMPLE_MS + 150)).toBeNull();
    // No tick for 300 ms: a loop stuck in one task has not sampled, yet it is late.
    expect(load.admit(start + 2 * LOOP_SAMPLE_MS + 450)).toBe('event_loop');
  });

  it('should shed while the oldest confirm awaited is older than the bound, and not once it came', () => {
    const { load } = monitor({ maxInFlight: 0, maxEventLoopDelayMs: 0 });
    const done = load.confirmStarted(0);
    const later = load.confirmStarted(900);
    expect(load.admit(1_500)).toBe('confirm_wait');
    done();
    // The oldest still awaited is now the later one: 600 ms.
    expect(load.admit(1_500)).toBeNull();
    expect(load.admit(2_000)).toBe('confirm_wait');
    later();
    expect(load.admit(2_000)).toBeNull();
  });

  it('should not watch a measure whose bound is 0', () => {
    const { load } = monitor({ maxInFlight: 0, maxEventLoopDelayMs: 0, maxConfirmWaitMs: 0 });
    load.confirmStarted(0);
    load.tick(0);
    load.tick(10_000);
    for (let i = 0; i < 1_000; i++) expect(load.admit(10_000)).toBeNull();
  });

  it('should count every shed purchase by reason and write one line per interval, not one per purchase', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { load, metrics } = monitor();
    for (let i = 0; i < 500; i++) load.shed('in_flight', 1_000 + i);
    load.shed('event_loop', 2_000);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toMatch(/^shedding purchases: shed in_flight=1 /);
    load.shed('in_flight', 1_000 + SHED_LOG_INTERVAL_MS);
    expect(warn).toHaveBeenCalledTimes(2);
    expect(String(warn.mock.calls[1][0])).toMatch(
      /^still shedding purchases: shed in_flight=500 event_loop=1 inFlight=0 /,
    );
    expect(await shedCounts(metrics)).toEqual({ in_flight: 501, event_loop: 1 });
  });

  it('should tell shed buyers to come back between Retry-After and twice that, spread', () => {
    const { load } = monitor({ retryAfterSeconds: 2 });
    const seen = new Set(Array.from({ length: 500 }, () => load.retryAfterSeconds()));
    expect([...seen].sort()).toEqual([2, 3, 4]);
  });
});
