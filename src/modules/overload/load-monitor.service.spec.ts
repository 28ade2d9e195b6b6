import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { OverloadConfig } from '../../config/overload.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  FIRST_MEASURED_BOUND,
  LATENCY_MIN_SAMPLES,
  LOOP_SAMPLE_MS,
  LoadMonitorService,
  MIN_MEASURED_BOUND,
  PACE_WINDOW_MS,
  SHED_LOG_INTERVAL_MS,
} from './load-monitor.service.js';

const BOUNDS: OverloadConfig = {
  maxInFlight: 2,
  latencyTargetMs: 0,
  maxEventLoopDelayMs: 100,
  maxConfirmWaitMs: 1_000,
  retryAfterSeconds: 1,
  retryAfterMaxSeconds: 30,
  retryShare: 0.1,
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
    expect(load.admit(undefined, now)).toBeNull();
    expect(load.admit(undefined, now)).toBeNull();
    expect(load.admit(undefined, now)).toBe('in_flight');
    expect(load.purchasesInProgress()).toBe(2);
    load.leave();
    expect(load.admit(undefined, now)).toBeNull();
    expect(load.purchasesInProgress()).toBe(2);
  });

  it('should shed while the last timer ran later than the bound, and while the loop is late now', () => {
    const { load } = monitor();
    const start = performance.now();
    load.tick(start);
    load.tick(start + LOOP_SAMPLE_MS + 150);
    expect(load.admit(undefined, start + LOOP_SAMPLE_MS + 150)).toBe('event_loop');
    load.tick(start + 2 * LOOP_SAMPLE_MS + 150);
    expect(load.admit(undefined, start + 2 * LOOP_SAMPLE_MS + 150)).toBeNull();
    // No tick for 300 ms: a loop stuck in one task has not sampled, yet it is late.
    expect(load.admit(undefined, start + 2 * LOOP_SAMPLE_MS + 450)).toBe('event_loop');
  });

  it('should shed while the oldest confirm awaited is older than the bound, and not once it came', () => {
    const { load } = monitor({ maxInFlight: 0, maxEventLoopDelayMs: 0 });
    const done = load.confirmStarted(0);
    const later = load.confirmStarted(900);
    expect(load.admit(undefined, 1_500)).toBe('confirm_wait');
    done();
    // The oldest still awaited is now the later one: 600 ms.
    expect(load.admit(undefined, 1_500)).toBeNull();
    expect(load.admit(undefined, 2_000)).toBe('confirm_wait');
    later();
    expect(load.admit(undefined, 2_000)).toBeNull();
  });

  it('should not watch a measure whose bound is 0', () => {
    const { load } = monitor({ maxInFlight: 0, maxEventLoopDelayMs: 0, maxConfirmWaitMs: 0 });
    load.confirmStarted(0);
    load.tick(0);
    load.tick(10_000);
    for (let i = 0; i < 1_000; i++) expect(load.admit(undefined, 10_000)).toBeNull();
  });

  it('should count every shed purchase by reason and write one line per interval, not one per purchase', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { load, metrics } = monitor();
    for (let i = 0; i < 500; i++) load.shed('in_flight', undefined, 1_000 + i);
    load.shed('event_loop', undefined, 2_000);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toMatch(/^shedding purchases: shed in_flight=1 /);
    load.shed('in_flight', undefined, 1_000 + SHED_LOG_INTERVAL_MS);
    expect(warn).toHaveBeenCalledTimes(2);
    expect(String(warn.mock.calls[1][0])).toMatch(
      /^still shedding purchases: shed in_flight=500 event_loop=1 inFlight=0 /,
    );
    expect(await shedCounts(metrics)).toEqual({ in_flight: 501, event_loop: 1 });
  });

  it('should tell shed buyers to come back between Retry-After and twice that, spread, while few are shed', () => {
    const { load } = monitor({ retryAfterSeconds: 2 });
    const seen = new Set(Array.from({ length: 500 }, () => load.shed('in_flight')));
    expect([...seen].sort()).toEqual([2, 3, 4]);
  });

  /**
   * An instance that takes `capacity` purchases a second (each 100 ms it fills its `capacity / 10`
   * places and answers them), and `people` buyers shed at `from`, each back when told and shed
   * again, for `seconds`; `newcomers` a second are shed once and never come back (a script's new
   * accounts). Returns each second's returns and the mean Retry-After at its end.
   */
  function crowd(
    load: LoadMonitorService,
    {
      people,
      capacity,
      seconds,
      newcomers = 0,
      from = performance.now(),
    }: {
      people: number;
      capacity: number;
      seconds: number;
      newcomers?: number;
      from?: number;
    },
  ): { returns: number[]; means: number[] } {
    const due = new Map<number, number>();
    const shed = (userId: number, now: number) => {
      expect(load.admit(userId, now)).toBe('in_flight');
      due.set(userId, now + load.shed('in_flight', userId, now) * 1_000);
    };
    const places = capacity / 10;
    let fresh = 1_000_000;
    const returns: number[] = [];
    const means: number[] = [];
    let returned = 0;
    for (let step = 0; step < seconds * 10; step++) {
      const now = from + step * 100;
      for (let i = 0; i < places; i++) expect(load.admit(undefined, now)).toBeNull();
      if (step === 0) for (let userId = 1; userId <= people; userId++) shed(userId, now);
      for (const [userId, at] of due) {
        if (at > now || userId >= 1_000_000) continue;
        returned++;
        shed(userId, now);
      }
      for (let i = 0; i < newcomers / 10; i++) shed(fresh++, now);
      for (let i = 0; i < places; i++) load.leave();
      if (step % 10 === 9) {
        load.tick(from + (step + 1) * 100);
        returns.push(returned);
        means.push(load.retryAfterMean());
        returned = 0;
      }
    }
    return { returns, means };
  }

  it('should lengthen the Retry-After until the shed buyers come back at the share of the purchases taken aimed at, at most doubling it a second', () => {
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { load } = monitor({ maxInFlight: 100, maxEventLoopDelayMs: 0 });
    expect(load.retryAfterMean()).toBe(1.5);
    // 900 waiting at 1,000 taken a second: 10 % is 100 returns a second, a mean of 9 s.
    const { returns, means } = crowd(load, { people: 900, capacity: 1_000, seconds: 60 });
    for (let i = 1; i < means.length; i++) expect(means[i]).toBeLessThanOrEqual(2 * means[i - 1]);
    const settled = returns.slice(-30);
    const mean = settled.reduce((sum, n) => sum + n, 0) / settled.length;
    expect(mean).toBeGreaterThan(75);
    expect(mean).toBeLessThan(130);
    const told = means.slice(-30).reduce((sum, m) => sum + m, 0) / 30;
    expect(told).toBeGreaterThan(6);
    expect(told).toBeLessThan(12);
  });

  it('should bring the Retry-After back to rest once nobody comes back, and keep it within OVERLOAD_RETRY_AFTER_MAX_SECONDS', () => {
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { load } = monitor({ maxInFlight: 100, maxEventLoopDelayMs: 0, retryAfterMaxSeconds: 8 });
    const start = performance.now();
    const { means } = crowd(load, { people: 900, capacity: 1_000, seconds: 30, from: start });
    // 900 over 100 a second wants 9 s; the bound's three quarters (the draw reaches 4/3) is 6.
    expect(means.at(-1)).toBe(6);
    const after = crowd(load, { people: 0, capacity: 1_000, seconds: 15, from: start + 30_000 });
    expect(after.means.at(-1)).toBe(1.5);
  });

  it('should not lengthen the Retry-After for shed buyers who never come back, as a script sending each purchase as a new account', () => {
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { load } = monitor({ maxInFlight: 100, maxEventLoopDelayMs: 0 });
    const { means } = crowd(load, { people: 0, newcomers: 5_000, capacity: 1_000, seconds: 10 });
    expect(new Set(means)).toEqual(new Set([1.5]));
  });

  it('should keep the Retry-After at rest with OVERLOAD_RETRY_SHARE_PERCENT=0, however many come back', () => {
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { load } = monitor({ maxInFlight: 100, maxEventLoopDelayMs: 0, retryShare: 0 });
    const { returns, means } = crowd(load, { people: 900, capacity: 1_000, seconds: 10 });
    expect(new Set(means)).toEqual(new Set([1.5]));
    expect(Math.max(...returns)).toBeGreaterThan(400);
  });

  it('should shed a buyer who comes back before their Retry-After with the time left, not as a return, and take them once it passed', async () => {
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { load, metrics } = monitor({ maxInFlight: 1, maxEventLoopDelayMs: 0 });
    const start = performance.now();
    expect(load.admit(7, start)).toBeNull();
    expect(load.admit(8, start)).toBe('in_flight');
    const told = load.shed('in_flight', 8, start);
    load.leave();
    // A place is free, but buyer 8 was told to wait: the place is not theirs before that.
    expect(load.admit(8, start + 200)).toBe('retry_early');
    expect(load.shed('retry_early', 8, start + 200)).toBe(Math.ceil((told * 1_000 - 300) / 1_000));
    expect(load.admit(9, start + 200)).toBeNull();
    load.leave();
    // Back early by the thousand, among a thousand purchases taken: not returns (counted as
    // such, 1,000 a second against the 100 aimed at would have doubled the Retry-After).
    for (let i = 0; i < 1_000; i++) {
      expect(load.admit(undefined, start + 300)).toBeNull();
      load.leave();
      expect(load.admit(8, start + 300)).toBe('retry_early');
      load.shed('retry_early', 8, start + 300);
    }
    load.tick(start + PACE_WINDOW_MS);
    expect(load.retryAfterMean()).toBe(1.5);
    // On time (its rounding allowed for), buyer 8 is taken.
    expect(load.admit(8, start + told * 1_000 - 50)).toBeNull();
    expect(await shedCounts(metrics)).toEqual({ in_flight: 1, retry_early: 1_001 });
  });

  /** Whole milliseconds: the windows' ends are then exact sums. */
  const now = () => Math.ceil(performance.now());

  /**
   * A service that answers `capacity` purchases a second (a `slow`-th of it while a store is
   * slow) whatever the crowd, so that a purchase waits behind the others in progress (Little's
   * law: latency = in progress / rate); `crowd` buyers keep asking at once. Returns the bound
   * after each second and the latency the purchases taken had.
   */
  function measured(
    load: LoadMonitorService,
    {
      capacity,
      seconds,
      crowd = 2_000,
      slow = () => 1,
      from = now(),
    }: {
      capacity: number;
      seconds: number;
      crowd?: number;
      slow?: (second: number) => number;
      from?: number;
    },
  ): { bounds: number[]; latencies: number[] } {
    const bounds: number[] = [];
    const latencies: number[] = [];
    for (let second = 0; second < seconds; second++) {
      const at = from + second * PACE_WINDOW_MS;
      let taken = 0;
      while (taken < crowd && load.admit(undefined, at) === null) taken++;
      const rate = capacity / slow(second);
      const latency = (taken * 1_000) / rate;
      for (let i = 0; i < taken; i++) load.leave(at - latency, at);
      // The others answered in the second, each as the crowd keeps as many in progress.
      for (let i = taken; i < rate; i++) {
        load.admit(undefined, at);
        load.leave(at - latency, at);
      }
      load.tick(at + PACE_WINDOW_MS);
      bounds.push(load.inFlightBound());
      latencies.push(latency);
    }
    return { bounds, latencies };
  }

  it('should raise a measured in-flight bound while the purchases taken keep the latency target, and settle where they just keep it', () => {
    const { load } = monitor({ maxInFlight: 0, maxEventLoopDelayMs: 0, latencyTargetMs: 200 });
    expect(load.inFlightBound()).toBe(FIRST_MEASURED_BOUND);
    // 2,000 a second at 200 ms: 400 in progress at most.
    const { bounds, latencies } = measured(load, { capacity: 2_000, seconds: 30 });
    for (let i = 1; i < bounds.length; i++)
      expect(bounds[i]).toBeLessThanOrEqual(1.5 * bounds[i - 1] + 1);
    expect(Math.max(...latencies)).toBeLessThanOrEqual(200);
    expect(bounds.at(-1)).toBeGreaterThan(0.75 * 400);
    expect(new Set(bounds.slice(-10)).size).toBe(1);
  });

  it('should cut the measured bound at once while the latency is past the target (a slow store), and raise it again after', () => {
    const { load } = monitor({ maxInFlight: 0, maxEventLoopDelayMs: 0, latencyTargetMs: 200 });
    const start = now();
    const before = measured(load, { capacity: 2_000, seconds: 20, from: start });
    const settled = before.bounds.at(-1)!;
    // The store four times slower for 10 s: the purchases taken are cut to a quarter or so.
    const during = measured(load, {
      capacity: 2_000,
      seconds: 10,
      slow: () => 4,
      from: start + 20 * PACE_WINDOW_MS,
    });
    expect(during.bounds[0]).toBeLessThanOrEqual(Math.ceil(settled / 2));
    expect(Math.max(...during.latencies.slice(3))).toBeLessThanOrEqual(200);
    expect(during.bounds.at(-1)).toBeLessThan(0.3 * settled);
    const after = measured(load, {
      capacity: 2_000,
      seconds: 15,
      from: start + 30 * PACE_WINDOW_MS,
    });
    expect(after.bounds.at(-1)).toBeGreaterThan(0.75 * 400);
  });

  it('should keep the measured bound when it turns nobody away or a second took too few purchases to tell, and never cut it below its floor', () => {
    const { load } = monitor({ maxInFlight: 500, maxEventLoopDelayMs: 0, latencyTargetMs: 200 });
    const start = now();
    // Fewer than the bound ask, fast: nothing tells that more would keep the target.
    const quiet = measured(load, { capacity: 2_000, seconds: 5, crowd: 30, from: start });
    expect(new Set(quiet.bounds)).toEqual(new Set([FIRST_MEASURED_BOUND]));
    // Slow, but too few to judge a p99 by.
    const few = measured(load, {
      capacity: 10,
      seconds: 5,
      crowd: LATENCY_MIN_SAMPLES - 1,
      from: start + 5 * PACE_WINDOW_MS,
    });
    expect(new Set(few.bounds)).toEqual(new Set([FIRST_MEASURED_BOUND]));
    // Very slow with enough of them: cut, but not below the floor; within OVERLOAD_MAX_IN_FLIGHT.
    const slow = measured(load, { capacity: 60, seconds: 5, from: start + 10 * PACE_WINDOW_MS });
    expect(Math.min(...slow.bounds)).toBe(MIN_MEASURED_BOUND);
    const fast = measured(load, {
      capacity: 100_000,
      seconds: 10,
      from: start + 15 * PACE_WINDOW_MS,
    });
    expect(fast.bounds.at(-1)).toBe(500);
  });

  it('should keep the bound at OVERLOAD_MAX_IN_FLIGHT without a latency target, however slow the purchases', () => {
    const { load } = monitor({ maxInFlight: 300, maxEventLoopDelayMs: 0 });
    const { bounds } = measured(load, { capacity: 100, seconds: 5 });
    expect(new Set(bounds)).toEqual(new Set([300]));
  });
});
