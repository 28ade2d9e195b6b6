import { describe, expect, it, vi } from 'vitest';

import { FAULT_KIND_NAMES, type Fault, type FaultSurface } from './faults.js';
import {
  generateSchedule,
  MAX_CONCURRENT_FAULTS,
  resourcesOf,
  startNemesis,
  type Schedule,
} from './nemesis.js';
import { topology } from './options.js';
import { validateEnv } from '../../src/config/env.validation.js';
import { PAUSE_POINTS } from '../../src/config/faults.config.js';

const INSTANCES = topology(3, 'split');
const overlap = (a: Fault, b: Fault) => a.atMs <= b.atMs + b.holdMs && b.atMs <= a.atMs + a.holdMs;

describe('the fault schedule', () => {
  it('should be the same for the same seed, duration and instances, and differ for another seed', () => {
    const first = generateSchedule(42, 120_000, INSTANCES);
    expect(generateSchedule(42, 120_000, INSTANCES)).toEqual(first);
    expect(first.faults.length).toBeGreaterThan(10);
    expect(generateSchedule(43, 120_000, INSTANCES).faults).not.toEqual(first.faults);
  });

  it('should draw the Redis-down mode from the seed: both modes, the same for a seed', () => {
    const modes = Array.from({ length: 20 }, (_, seed) =>
      generateSchedule(seed, 30_000, INSTANCES),
    );
    expect(new Set(modes.map((schedule) => schedule.redisDownMode))).toEqual(
      new Set(['database', 'closed']),
    );
    for (const [seed, schedule] of modes.entries()) {
      expect(generateSchedule(seed, 120_000, topology(2, 'all')).redisDownMode).toBe(
        schedule.redisDownMode,
      );
    }
  });

  it('should draw every instance slow steps from the seed, each a pause point the app accepts', () => {
    const { slowSteps } = generateSchedule(7, 120_000, INSTANCES);
    expect(generateSchedule(7, 30_000, topology(2, 'all')).slowSteps).toEqual(slowSteps);
    expect(
      validateEnv({ FAULT_DELAYS: slowSteps.join(',') })
        .faults.delays.map((d) => d.point)
        .sort(),
    ).toEqual([...PAUSE_POINTS].sort());
  });

  it("should draw every instance's consumer window from the seed, a batch at most half the prefetch", () => {
    const drawn = new Set<number>();
    for (let seed = 1; seed <= 30; seed++) {
      const { consumer } = generateSchedule(seed, 120_000, INSTANCES);
      expect(generateSchedule(seed, 30_000, topology(2, 'all')).consumer).toEqual(consumer);
      const read = validateEnv({
        CONSUMER_PREFETCH: String(consumer!.prefetch),
        CONSUMER_BATCH_SIZE: String(consumer!.batchSize),
      }).rabbitmq.consumer;
      expect(read.batchSize * 2).toBeLessThanOrEqual(read.prefetch);
      drawn.add(read.prefetch);
    }
    expect(drawn.size).toBeGreaterThan(1);
  });

  it('should hold every fault within the run and heal it before the workload stops', () => {
    for (let seed = 1; seed <= 20; seed++) {
      for (const fault of generateSchedule(seed, 60_000, INSTANCES).faults) {
        expect(fault.atMs).toBeGreaterThan(0);
        expect(fault.atMs + fault.holdMs).toBeLessThanOrEqual(59_000);
      }
    }
  });

  it('should overlap faults, never more than the cap at once, never two on one resource', () => {
    let overlapping = 0;
    let most = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const { faults } = generateSchedule(seed, 120_000, INSTANCES);
      for (const fault of faults) {
        const during = faults.filter((other) => other !== fault && overlap(other, fault));
        overlapping += during.length;
        // The most at once is reached when one starts: count those held at each start.
        const atOnce = faults.filter(
          (other) => other.atMs <= fault.atMs && fault.atMs <= other.atMs + other.holdMs,
        );
        expect(atOnce.length).toBeLessThanOrEqual(MAX_CONCURRENT_FAULTS);
        most = Math.max(most, atOnce.length);
        const mine = resourcesOf(fault, INSTANCES);
        for (const other of during) {
          expect(resourcesOf(other, INSTANCES).filter((r) => mine.includes(r))).toEqual([]);
        }
      }
    }
    expect(overlapping).toBeGreaterThan(20);
    expect(most).toBe(MAX_CONCURRENT_FAULTS);
  });

  it('should draw every kind of fault, each on a target the topology has', () => {
    const faults = Array.from({ length: 10 }, (_, i) =>
      generateSchedule(i, 300_000, INSTANCES, true),
    ).flatMap((schedule) => schedule.faults);
    expect(new Set(faults.map((fault) => fault.kind))).toEqual(new Set(FAULT_KIND_NAMES));
    const names = new Set([...INSTANCES.map((instance) => instance.name), 'all']);
    for (const fault of faults) {
      if (fault.instance !== undefined) expect(names).toContain(fault.instance);
      if (fault.kind === 'channel-break') expect(fault.instance).toBe('worker-1');
      if (fault.kind.startsWith('proxy-')) expect(fault.service).toBeDefined();
    }
  });

  it('should draw the node kills and the failover only on the clustered engines', () => {
    const clusterKinds = new Set(['broker-node-kill', 'db-failover']);
    const kindsOf = (cluster: boolean) =>
      Array.from({ length: 20 }, (_, seed) =>
        generateSchedule(seed, 300_000, INSTANCES, cluster),
      ).flatMap((schedule) => schedule.faults.map((fault) => fault.kind));
    const plain = kindsOf(false);
    const clustered = kindsOf(true);

    expect(plain.some((kind) => clusterKinds.has(kind))).toBe(false);
    expect(new Set(clustered.filter((kind) => clusterKinds.has(kind)))).toEqual(clusterKinds);
    expect(generateSchedule(7, 300_000, INSTANCES, true).cluster).toBe(true);
  });

  it('should break channels only on instances that consume', () => {
    const allRoles = topology(2, 'all');
    const breaks = Array.from({ length: 10 }, (_, seed) =>
      generateSchedule(seed, 300_000, allRoles),
    )
      .flatMap((schedule) => schedule.faults)
      .filter((fault) => fault.kind === 'channel-break');
    expect(new Set(breaks.map((fault) => fault.instance))).toEqual(new Set(['app-1', 'app-2']));
  });
});

/** Records each call, so that the order of injects and heals can be asserted. */
function recordingSurface(calls: string[]): FaultSurface {
  const note =
    (name: string) =>
    (...args: unknown[]) => {
      calls.push([name, ...args].join(' '));
    };
  return {
    killInstance: async (name) => note('kill')(name),
    restartInstance: note('restart'),
    pauseInstance: note('pause'),
    resumeInstance: note('resume'),
    setSlowSteps: note('slow-steps'),
    killRedis: async (keep) => note('kill-redis')(keep),
    startRedis: async () => note('start-redis')(),
    pauseRedis: note('pause-redis'),
    resumeRedis: note('resume-redis'),
    cutProxies: note('cut'),
    restoreProxies: note('restore'),
    stallProxies: note('stall'),
    resumeProxies: note('resume-proxy'),
    silenceProxies: note('silence'),
    slowProxies: note('slow'),
    restoreSpeed: note('restore-speed'),
    closeBrokerConnections: async () => note('close-broker')(),
    breakConsumerChannel: async (name) => (note('break')(name), false),
    killBrokerNode: async () => (note('kill-broker-node')(), 'rabbit-a'),
    startBrokerNode: async () => note('start-broker-node')(),
    killDatabasePrimary: async () => note('kill-primary')(),
    failOverDatabase: async () => note('fail-over')(),
  };
}

describe('the nemesis timeline', () => {
  it('should inject and heal each fault in turn, a fault on a busy resource after its heal', async () => {
    const calls: string[] = [];
    const schedule: Schedule = {
      seed: 1,
      durationMs: 1_000,
      instances: INSTANCES,
      redisDownMode: 'database',
      slowSteps: [],
      faults: [
        { id: 1, kind: 'app-pause', instance: 'api-1', atMs: 0, holdMs: 60 },
        // Scheduled inside the first one's hold (a late heal): it waits for that heal.
        { id: 2, kind: 'app-kill', instance: 'api-1', atMs: 20, holdMs: 10 },
        { id: 3, kind: 'channel-break', instance: 'worker-1', atMs: 5, holdMs: 0 },
      ],
    };
    const started = performance.now();
    const nemesis = startNemesis(
      recordingSurface(calls),
      schedule,
      () => performance.now() - started,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    await nemesis.stop();
    expect(calls).toEqual([
      'pause api-1',
      'break worker-1',
      'resume api-1',
      'kill api-1',
      'restart api-1',
    ]);
    expect(nemesis.events.find((event) => event.faultId === 3)?.error).toBe(
      'no consuming channel to break',
    );
  });

  it('should heal a fault still held when stopped, and never inject one due after', async () => {
    const calls: string[] = [];
    const schedule: Schedule = {
      seed: 1,
      durationMs: 120_000,
      instances: INSTANCES,
      redisDownMode: 'database',
      slowSteps: [],
      faults: [
        { id: 1, kind: 'proxy-cut', instance: 'all', service: 'mysql', atMs: 0, holdMs: 60_000 },
        { id: 2, kind: 'redis-kill', atMs: 90_000, holdMs: 1_000 },
      ],
    };
    const started = performance.now();
    const nemesis = startNemesis(
      recordingSurface(calls),
      schedule,
      () => performance.now() - started,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    await nemesis.stop();
    expect(calls).toEqual(['cut all mysql', 'restore all mysql']);
  });

  it('should slow a link down for its hold and restore its speed at the heal', async () => {
    const calls: string[] = [];
    const fault: Fault = {
      id: 1,
      kind: 'proxy-slow',
      instance: 'worker-1',
      service: 'mysql',
      atMs: 0,
      holdMs: 30,
    };
    const nemesis = startNemesis(
      recordingSurface(calls),
      {
        seed: 1,
        durationMs: 1_000,
        instances: INSTANCES,
        redisDownMode: 'database',
        slowSteps: [],
        faults: [fault],
      },
      () => 0,
    );
    await vi.waitFor(() => expect(calls).toHaveLength(2));
    await nemesis.stop();
    expect(calls).toEqual(['slow worker-1 mysql', 'restore-speed worker-1 mysql']);
  });
});
