// The nemesis's fault kinds, one entry each: which targets it can hit, how long it is held, which
// resources it holds meanwhile (two faults on one resource never overlap), and how it is injected
// and healed. A new kind of fault is one more entry here.
import { setTimeout as sleep } from 'node:timers/promises';

export const SERVICES = ['redis', 'rabbitmq', 'mysql'] as const;
export type Service = (typeof SERVICES)[number];

export type Role = 'api' | 'worker' | 'all';

export interface InstanceSpec {
  name: string;
  role: Role;
}

/** One fault of a schedule: what, on what, when (ms after the start) and for how long. */
export interface Fault {
  id: number;
  kind: FaultKindName;
  /** The app instance it acts on, `all` for every instance's proxy, absent for Redis or the broker. */
  instance?: string;
  service?: Service;
  atMs: number;
  /** 0 for a fault that is over once injected (connections closed, a channel broken). */
  holdMs: number;
}

export type Target = Pick<Fault, 'instance' | 'service'>;
/** What a kind's inject and heal see of the fault they play. */
type Played = Target & Pick<Fault, 'holdMs'>;

/** What faults act on: the processes and proxies of the run (ChaosSystem implements it). */
export interface FaultSurface {
  killInstance(name: string): Promise<void>;
  /** Starts it again; it may take a while to be ready (the run waits for that at the heal). */
  restartInstance(name: string): void;
  pauseInstance(name: string): void;
  resumeInstance(name: string): void;
  /** Switches the instance's slow steps (FAULT_DELAYS, see FaultInjectorService) on or off. */
  setSlowSteps(name: string, on: boolean): void;
  /**
   * Kills redis-server outright (--cluster: a master of the Redis Cluster); with `keepData`, after
   * it wrote a snapshot to start from.
   */
  killRedis(keepData: boolean): Promise<void>;
  startRedis(): Promise<void>;
  /** SIGSTOPs redis-server (--cluster: a master, failed over once the pause outlasts its timeout). */
  pauseRedis(): Promise<void> | void;
  resumeRedis(): void;
  cutProxies(instance: string, service: Service): void;
  restoreProxies(instance: string, service: Service): void;
  stallProxies(instance: string, service: Service): void;
  resumeProxies(instance: string, service: Service): void;
  /**
   * The open connections through the proxies go silent for good, as half-open ones (see
   * TcpProxy.silenceOpen); new connections pass. Nothing heals it but the app's own drop.
   */
  silenceProxies(instance: string, service: Service): void;
  /** Holds the bytes and lets them through in turns (see slow-link.ts) until restoreSpeed. */
  slowProxies(instance: string, service: Service): void;
  restoreSpeed(instance: string, service: Service): void;
  closeBrokerConnections(): Promise<void>;
  /**
   * Makes the broker close one consuming channel of the instance; false when it had none for a
   * few seconds (its connection down, or not consuming again yet).
   */
  breakConsumerChannel(instance: string): Promise<boolean>;
  /** --cluster: SIGKILLs the broker node that leads the orders queue; returns its name. */
  killBrokerNode(): Promise<string>;
  startBrokerNode(): Promise<void>;
  /** --cluster: SIGKILLs the MariaDB primary. */
  killDatabasePrimary(): Promise<void>;
  /** --cluster: promotes the replica, moves every client to it, makes the old one follow it. */
  failOverDatabase(): Promise<void>;
}

interface FaultKind {
  /** What it does, for the report. */
  title: string;
  /** Only on the clustered engines (--cluster), and only there drawn. */
  cluster?: true;
  /** How often it is drawn, against the other kinds. */
  weight: number;
  holdMs: readonly [number, number];
  targets(instances: readonly InstanceSpec[]): Target[];
  resources(target: Target, instances: readonly InstanceSpec[]): string[];
  inject(surface: FaultSurface, fault: Played): Promise<unknown> | void;
  heal(surface: FaultSurface, fault: Played): Promise<unknown> | void;
}

const eachInstance = (instances: readonly InstanceSpec[]) =>
  instances.map((instance) => ({ instance: instance.name }));
const consumers = (instances: readonly InstanceSpec[]) =>
  eachInstance(instances.filter((instance) => instance.role !== 'api'));
/** Each instance's proxy to each service, and each service's proxies of all instances at once. */
const proxyTargets = (instances: readonly InstanceSpec[]) =>
  SERVICES.flatMap((service) =>
    [...instances.map((instance) => instance.name), 'all'].map((instance) => ({
      instance,
      service,
    })),
  );
const proxyResources = (target: Target, instances: readonly InstanceSpec[]) =>
  (target.instance === 'all' ? instances.map((instance) => instance.name) : [target.instance]).map(
    (name) => `proxy:${name}:${target.service}`,
  );
const processOf = (target: Target) => [`process:${target.instance}`];
const REDIS_SERVER = () => ['redis-server'];
/** From the channel's break to the kill: the new session has its first deliveries by then. */
const REOPEN_THEN_RESTART_MS = 500;
/**
 * From a flapping channel's second break to the kill, as a share of the hold (0.3 to 1.2 s): a
 * few new purchases reach the new session behind the redelivered copies, and the barriers of the
 * restart come while the old session's batches and the new one's are still being written.
 */
const FLAP_KILL_AFTER_SHARE = 0.1;
/**
 * After Redis is back, the flapping link's writes stay slow this long: the old session's batches
 * are written first (their claims waited for Redis), then the new session's, and the restart's
 * barrier passes among them; a barrier that passes too early meets the new batches still slow.
 */
const FLAP_SLOW_AFTER_MS = 30_000;
const NONE = () => [{}];

/** Both named: a target's instance and service, checked where a kind needs them. */
function named(target: Target): { instance: string; service: Service } {
  if (target.instance === undefined || target.service === undefined) {
    throw new Error(`fault target lacks an instance or a service: ${JSON.stringify(target)}`);
  }
  return { instance: target.instance, service: target.service };
}

function instanceOf(target: Target): string {
  if (target.instance === undefined) throw new Error('fault target lacks an instance');
  return target.instance;
}

export const FAULT_KINDS = {
  'app-kill': {
    title: 'app instance SIGKILLed, then started again',
    weight: 2,
    holdMs: [2_000, 8_000],
    targets: eachInstance,
    resources: processOf,
    inject: (surface, target) => surface.killInstance(instanceOf(target)),
    heal: (surface, target) => surface.restartInstance(instanceOf(target)),
  },
  'app-pause': {
    title: 'app instance SIGSTOPped (a long GC pause), then SIGCONT',
    weight: 2,
    holdMs: [1_000, 8_000],
    targets: eachInstance,
    resources: processOf,
    inject: (surface, target) => surface.pauseInstance(instanceOf(target)),
    heal: (surface, target) => surface.resumeInstance(instanceOf(target)),
  },
  'slow-steps': {
    title:
      "an instance's slow steps switched on (its batch writes, loads, locks and returns held; see the schedule's slowSteps)",
    weight: 2,
    holdMs: [3_000, 15_000],
    targets: eachInstance,
    resources: processOf,
    inject: (surface, target) => surface.setSlowSteps(instanceOf(target), true),
    heal: (surface, target) => surface.setSlowSteps(instanceOf(target), false),
  },
  'reopen-then-restart': {
    title:
      "a consumer's channel broken, then redis-server SIGKILLed moments later and restarted empty",
    weight: 1,
    holdMs: [1_000, 5_000],
    targets: consumers,
    resources: (target) => [`channel:${target.instance}`, 'redis-server'],
    inject: async (surface, target) => {
      const broken = await surface.breakConsumerChannel(instanceOf(target));
      await sleep(REOPEN_THEN_RESTART_MS);
      await surface.killRedis(false);
      if (!broken) throw new Error('no consuming channel to break; Redis killed all the same');
    },
    heal: (surface) => surface.startRedis(),
  },
  'channel-flap': {
    title:
      "a consumer's link flaps while its writes are slow: its slow steps on, its channel broken twice (half the hold apart: the first new session young, one batch written and more in flight), redis-server SIGKILLed a tenth of the hold later and restarted empty",
    weight: 1,
    holdMs: [3_000, 12_000],
    targets: consumers,
    // Its process too: the slow steps are switched by a signal, which another fault's would undo.
    resources: (target) => [
      `channel:${target.instance}`,
      `process:${target.instance}`,
      'redis-server',
    ],
    inject: async (surface, target) => {
      const instance = instanceOf(target);
      surface.setSlowSteps(instance, true);
      const first = await surface.breakConsumerChannel(instance);
      await sleep(target.holdMs / 2);
      const second = await surface.breakConsumerChannel(instance);
      await sleep(Math.round(target.holdMs * FLAP_KILL_AFTER_SHARE));
      await surface.killRedis(false);
      if (!first || !second) throw new Error('a consuming channel was not there to break');
    },
    heal: async (surface, target) => {
      await surface.startRedis();
      await sleep(FLAP_SLOW_AFTER_MS);
      surface.setSlowSteps(instanceOf(target), false);
    },
  },
  'redis-kill': {
    title:
      'redis-server SIGKILLed, restarted empty (--cluster: a master, failed over when the hold outlasts its 3 s node timeout)',
    weight: 1,
    holdMs: [1_000, 6_000],
    targets: NONE,
    resources: REDIS_SERVER,
    inject: (surface) => surface.killRedis(false),
    heal: (surface) => surface.startRedis(),
  },
  'redis-pause': {
    title:
      'redis-server SIGSTOPped past the 5 s command timeout, then SIGCONT (--cluster: a master, failed over meanwhile; it comes back as a replica)',
    weight: 1,
    holdMs: [5_500, 9_000],
    targets: NONE,
    resources: REDIS_SERVER,
    inject: (surface) => surface.pauseRedis(),
    heal: (surface) => surface.resumeRedis(),
  },
  'redis-restart': {
    title:
      "redis-server SIGKILLed after a SAVE, restarted with that data (--cluster: a master; failed over when the hold outlasts its node timeout, and then its data is dropped for its new master's)",
    weight: 1,
    holdMs: [1_000, 4_000],
    targets: NONE,
    resources: REDIS_SERVER,
    inject: (surface) => surface.killRedis(true),
    heal: (surface) => surface.startRedis(),
  },
  'proxy-cut': {
    title: "connections to a service cut and refused (one instance's proxy, or all)",
    weight: 3,
    holdMs: [1_000, 10_000],
    targets: proxyTargets,
    resources: proxyResources,
    inject: (surface, target) => surface.cutProxies(named(target).instance, named(target).service),
    heal: (surface, target) =>
      surface.restoreProxies(named(target).instance, named(target).service),
  },
  'redis-silence': {
    title:
      "an instance's open connections to Redis go silent for good (half-open: the path forgot them, nothing closes them); new connections pass (one instance's, or all)",
    // Drawn on the clustered engines only for now, so that the seeds CI runs keep their schedules.
    cluster: true,
    weight: 1,
    holdMs: [0, 0],
    targets: (instances) => proxyTargets(instances).filter((target) => target.service === 'redis'),
    resources: proxyResources,
    inject: (surface, target) =>
      surface.silenceProxies(named(target).instance, named(target).service),
    heal: () => undefined,
  },
  'redis-outage': {
    title:
      "every instance's link to Redis cut for longer than the database fallback takes to open (the confirm timeout, the marks' lease and a barrier): MySQL sells meanwhile in database mode, 503 in closed mode",
    weight: 1,
    holdMs: [12_000, 20_000],
    targets: () => [{ instance: 'all', service: 'redis' }],
    resources: proxyResources,
    inject: (surface) => surface.cutProxies('all', 'redis'),
    heal: (surface) => surface.restoreProxies('all', 'redis'),
  },
  'proxy-stall': {
    title: "bytes to and from a service held (one instance's proxy, or all)",
    weight: 2,
    holdMs: [1_000, 8_000],
    targets: proxyTargets,
    resources: proxyResources,
    inject: (surface, target) =>
      surface.stallProxies(named(target).instance, named(target).service),
    heal: (surface, target) => surface.resumeProxies(named(target).instance, named(target).service),
  },
  'proxy-slow': {
    title: "a slow link to a service: bytes let through in turns (one instance's proxy, or all)",
    weight: 2,
    holdMs: [4_000, 15_000],
    targets: proxyTargets,
    resources: proxyResources,
    inject: (surface, target) => surface.slowProxies(named(target).instance, named(target).service),
    heal: (surface, target) => surface.restoreSpeed(named(target).instance, named(target).service),
  },
  'broker-close': {
    title: "the broker closes every connection of the run's vhost",
    weight: 1,
    holdMs: [0, 0],
    targets: NONE,
    resources: () => ['broker'],
    inject: (surface) => surface.closeBrokerConnections(),
    heal: () => undefined,
  },
  'channel-break': {
    title: "the broker closes a consumer's channel (an ack with an unknown delivery tag)",
    weight: 2,
    holdMs: [0, 0],
    targets: consumers,
    resources: (target) => [`channel:${target.instance}`],
    inject: async (surface, target) => {
      if (!(await surface.breakConsumerChannel(instanceOf(target)))) {
        throw new Error('no consuming channel to break');
      }
    },
    heal: () => undefined,
  },
  'broker-node-kill': {
    title:
      "the broker node leading the orders queue SIGKILLed, then started again (it rejoins the cluster; the instances' connections move to the other nodes meanwhile)",
    cluster: true,
    weight: 2,
    holdMs: [3_000, 12_000],
    targets: () => [{ service: 'rabbitmq' }],
    // One node down at a time: the quorum queues keep their majority.
    resources: () => ['broker-node'],
    inject: (surface) => surface.killBrokerNode(),
    heal: (surface) => surface.startBrokerNode(),
  },
  'redis-failover': {
    title:
      'a Redis Cluster master SIGKILLed and kept down past its node timeout: its replica takes its slots over without what it had not received yet; then the old master is started again empty and rejoins as the replica',
    cluster: true,
    weight: 1,
    holdMs: [6_000, 15_000],
    targets: NONE,
    resources: REDIS_SERVER,
    inject: (surface) => surface.killRedis(false),
    heal: (surface) => surface.startRedis(),
  },
  'db-failover': {
    title:
      'the MariaDB primary SIGKILLed a second after its replica stopped applying (it still receives); after the hold the replica applies what it holds and is promoted, every client moved to it, and the old server rejoins as the replica',
    cluster: true,
    weight: 1,
    holdMs: [2_000, 8_000],
    targets: () => [{ service: 'mysql' }],
    resources: () => ['db-primary'],
    inject: (surface) => surface.killDatabasePrimary(),
    heal: (surface) => surface.failOverDatabase(),
  },
} satisfies Record<string, FaultKind>;

export type FaultKindName = keyof typeof FAULT_KINDS;

export const FAULT_KIND_NAMES = Object.keys(FAULT_KINDS) as FaultKindName[];

export function faultKind(name: FaultKindName): FaultKind {
  return FAULT_KINDS[name];
}

/** The kinds a run draws from: the cluster's own only on the clustered engines. */
export function drawnKinds(cluster: boolean): FaultKindName[] {
  return FAULT_KIND_NAMES.filter((name) => cluster || faultKind(name).cluster !== true);
}

/** "proxy-cut api-1 mysql", for logs and the report. */
export function describeFault(fault: Fault): string {
  return [fault.kind, fault.instance, fault.service].filter(Boolean).join(' ');
}
