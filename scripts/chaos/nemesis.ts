// The nemesis: a fault schedule drawn from the seed (faults overlapping, each held for a while
// and healed), and the timeline that plays it against the run.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  describeFault,
  faultKind,
  drawnKinds,
  type Fault,
  type FaultSurface,
  type InstanceSpec,
} from './faults.js';
import { Rng } from './random.js';

export interface Schedule {
  seed: number;
  /** How long faults are injected for (the workload runs as long). */
  durationMs: number;
  instances: InstanceSpec[];
  /** On the clustered engines (--cluster): a RabbitMQ cluster and a MariaDB pair of the run's own. */
  cluster?: boolean;
  /** REDIS_DOWN_MODE of every instance: each mode has paths of its own for Redis faults. */
  redisDownMode: 'database' | 'closed';
  /**
   * Every instance's FAULT_DELAYS (`point:ms:percent`), switched on and off by the `slow-steps`
   * faults: steps slowed to widen the windows between a read and the write that trusts it.
   */
  slowSteps: string[];
  /**
   * Every instance's CONSUMER_PREFETCH and CONSUMER_BATCH_SIZE: small windows make sessions and
   * batches turn over often, so a re-open meets a young session with a batch in flight.
   */
  consumer?: { prefetch: number; batchSize: number };
  faults: Fault[];
}

/** Per pause point (src/config/fault-injector.service.ts): the delay's range in ms, and its chance's. */
const SLOW_STEPS: readonly { point: string; ms: [number, number]; percent: [number, number] }[] = [
  // A consumer batch held before its write: a channel re-open or a barrier lands meanwhile.
  { point: 'before-order-write', ms: [2_000, 8_000], percent: [30, 100] },
  // A load with its history read and nothing written: a wipe or a Redis restart lands inside.
  { point: 'preheat-before-stock', ms: [500, 3_000], percent: [100, 100] },
  // The fallback's return between its stale read and its rebuild.
  { point: 'fallback-return-stale-read', ms: [500, 3_000], percent: [100, 100] },
  // A path that wipes or loads a sale, its premise read, before the lock.
  { point: 'before-sale-lock', ms: [200, 2_000], percent: [30, 100] },
];

function drawSlowSteps(seed: number): string[] {
  const rng = new Rng(seed).fork('slow-steps');
  return SLOW_STEPS.map(
    (step) => `${step.point}:${rng.int(...step.ms)}:${rng.int(...step.percent)}`,
  );
}

/** Consumer windows drawn per seed, from a few deliveries to the app's default (500, 200). */
const PREFETCHES = [20, 100, 500] as const;
const BATCH_SIZES = [2, 10, 50, 200] as const;

function drawConsumer(seed: number): NonNullable<Schedule['consumer']> {
  const rng = new Rng(seed).fork('consumer');
  const prefetch = rng.pick(PREFETCHES);
  // At most half the window: a session has a batch in flight behind the one being written.
  return { prefetch, batchSize: rng.pick(BATCH_SIZES.filter((size) => size * 2 <= prefetch)) };
}

/** At most this many faults at once: more and the run is one long outage, which shows little. */
export const MAX_CONCURRENT_FAULTS = 3;
const FIRST_FAULT_MS: readonly [number, number] = [2_000, 5_000];
const GAP_MS: readonly [number, number] = [2_000, 9_000];
/** How often a run's instances decide purchases in MySQL while Redis is down (else: 503). */
const DATABASE_MODE_SHARE = 2 / 3;
/** The last fault is healed this long before the workload stops. */
const END_MARGIN_MS = 1_000;
const DRAWS_PER_SLOT = 8;

/** Every fault's resources while it lasts: two faults that share one never overlap in time. */
export function resourcesOf(fault: Fault, instances: readonly InstanceSpec[]): string[] {
  return faultKind(fault.kind).resources(fault, instances);
}

const overlaps = (a: Pick<Fault, 'atMs' | 'holdMs'>, b: Pick<Fault, 'atMs' | 'holdMs'>) =>
  a.atMs <= b.atMs + b.holdMs && b.atMs <= a.atMs + a.holdMs;

/** The same seed, duration and instances always draw the same schedule. */
export function generateSchedule(
  seed: number,
  durationMs: number,
  instances: InstanceSpec[],
  cluster = false,
): Schedule {
  const rng = new Rng(seed).fork('nemesis');
  const weights = drawnKinds(cluster).map((name) => [name, faultKind(name).weight] as const);
  const end = durationMs - END_MARGIN_MS;
  const faults: Fault[] = [];
  for (let at = rng.int(...FIRST_FAULT_MS); at < end; at += rng.int(...GAP_MS)) {
    for (let draw = 0; draw < DRAWS_PER_SLOT; draw++) {
      const kind = rng.weighted(weights);
      const spec = faultKind(kind);
      const target = rng.pick(spec.targets(instances));
      const [min, max] = spec.holdMs;
      const fault: Fault = {
        id: faults.length + 1,
        kind,
        ...target,
        atMs: at,
        holdMs: Math.min(rng.int(min, max), end - at),
      };
      if (fault.holdMs < min) continue;
      const during = faults.filter((other) => overlaps(other, fault));
      if (during.length >= MAX_CONCURRENT_FAULTS) break;
      const held = new Set(during.flatMap((other) => resourcesOf(other, instances)));
      if (resourcesOf(fault, instances).some((resource) => held.has(resource))) continue;
      faults.push(fault);
      break;
    }
  }
  const redisDownMode = new Rng(seed).fork('settings').chance(DATABASE_MODE_SHARE)
    ? 'database'
    : 'closed';
  return {
    seed,
    durationMs,
    instances,
    ...(cluster ? { cluster } : {}),
    redisDownMode,
    slowSteps: drawSlowSteps(seed),
    consumer: drawConsumer(seed),
    faults,
  };
}

/** What the nemesis did, when: the report's timeline (and the faults around a violation). */
export interface NemesisEvent {
  faultId: number;
  what: string;
  phase: 'inject' | 'heal';
  atMs: number;
  error?: string;
}

export interface Nemesis {
  events: NemesisEvent[];
  /** Stops drawing faults and heals each one still held; resolves when all are healed. */
  stop(): Promise<void>;
}

/**
 * Plays the schedule: each fault at its time, held, then healed. A fault waits for the heal of
 * any earlier one on its resources (an inject or a heal may take longer than the schedule
 * allowed, e.g. rabbitmqctl), so that two never act on one resource at once.
 */
export function startNemesis(
  surface: FaultSurface,
  schedule: Schedule,
  now: () => number,
): Nemesis {
  const events: NemesisEvent[] = [];
  const stopped = new AbortController();
  // Every scheduled fault waits on this one signal at once: a long schedule has dozens.
  setMaxListeners(schedule.faults.length + 10, stopped.signal);
  const busy = new Map<string, Promise<void>>();
  const wait = (ms: number) =>
    sleep(Math.max(0, ms), true, { signal: stopped.signal }).catch(() => false);
  const step = async (fault: Fault, phase: NemesisEvent['phase']) => {
    const event: NemesisEvent = { faultId: fault.id, what: describeFault(fault), phase, atMs: 0 };
    try {
      event.atMs = Math.round(now());
      const kind = faultKind(fault.kind);
      await (phase === 'inject' ? kind.inject(surface, fault) : kind.heal(surface, fault));
    } catch (error) {
      event.error = error instanceof Error ? error.message : String(error);
    }
    events.push(event);
  };
  const play = async (fault: Fault): Promise<void> => {
    if (!(await wait(fault.atMs - now()))) return;
    const resources = resourcesOf(fault, schedule.instances);
    const before = resources.flatMap((resource) => busy.get(resource) ?? []);
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    for (const resource of resources) busy.set(resource, done);
    try {
      await Promise.all(before);
      if (stopped.signal.aborted) return;
      await step(fault, 'inject');
      if (faultKind(fault.kind).holdMs[1] === 0) return;
      await wait(fault.holdMs);
      await step(fault, 'heal');
    } finally {
      release();
    }
  };
  const plays = Promise.all(schedule.faults.map(play));
  return {
    events,
    stop: async () => {
      stopped.abort();
      await plays;
    },
  };
}
