// The system under test: a private redis-server, a fresh database and vhost (or, with --cluster,
// the clustered engines of cluster-stores.ts), and K app instances (child processes of the built
// server), each reaching Redis, RabbitMQ and MySQL through proxies of its own, so that one can be
// cut off while the others are not. Implements what faults act on.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { Cluster, Redis } from 'ioredis';
import { createPool, type Pool } from 'mysql2/promise';

import { freePortBelowEphemeral } from '../lib/ports.js';
import {
  closeVhostConnections,
  databaseUrl,
  deleteVhost,
  dropDatabase,
  freshDatabase,
  freshVhost,
  rabbitUrl,
} from '../../bench/lib/stores.js';
import type { RedisClient } from '../../src/infra/redis/redis-client.js';
import { PrivateRedis } from '../../test/support/private-redis.js';
import { proxyInFront, TcpProxy } from '../../test/support/tcp-proxy.js';
import { startServer, stopServer, type ServerProcess } from '../lib/server-process.js';
import { ChannelBreaker, type BrokerClose } from './channel-breaker.js';
import type { ClusterStores } from './cluster-stores.js';
import { slowLink } from './slow-link.js';
import { SERVICES, type FaultSurface, type InstanceSpec, type Service } from './faults.js';

const READY_POLL_MS = 250;
/**
 * The checker's own Redis reads give up after this: a node paused or silent must fail a reading
 * (the run goes on and reports it), never hold the run. A cluster client's offline queue knows no
 * timeout; settle.ts bounds whole readings for that.
 */
const CHECKER_COMMAND_TIMEOUT_MS = 5_000;
const RESTART_AFTER_EXIT_MS = 1_000;
/** How long a channel break waits for the instance to consume (again) before it gives up. */
const CHANNEL_WAIT_MS = 3_000;

/** Something the run did not ask for: an instance that exited by itself, a failed restart. */
export interface SystemEvent {
  atMs: number;
  instance: string;
  what: string;
}

/** A channel of an instance the broker closed, not for the nemesis's bogus ack: the app's doing. */
export interface BrokerCloseEvent extends BrokerClose {
  atMs: number;
  instance: string;
}

export interface SystemOptions {
  repoRoot: string;
  outDir: string;
  /** The database's and the vhost's name; must contain "chaos". */
  name: string;
  instances: InstanceSpec[];
  jwtSecret: string;
  now: () => number;
  /** Settings for every instance, on top of the stores' URLs. */
  env: Record<string, string>;
  /**
   * The clustered engines (--cluster), in place of the machine's broker and MySQL server and of
   * the private redis-server.
   */
  cluster?: ClusterStores;
}

interface InstanceSetup {
  spec: InstanceSpec;
  port: number;
  /** Its proxy to each service; to the broker, one per node of a cluster. */
  proxies: Record<Service, TcpProxy[]>;
  repoRoot: string;
  env: NodeJS.ProcessEnv;
  logDir: string;
  onExit: (what: string) => void;
  onBrokerClose: (close: BrokerClose) => void;
}

/** One app instance: `node dist/main.js` as a child process, on the same port at every start. */
class AppInstance {
  readonly spec: InstanceSpec;
  readonly proxies: Record<Service, TcpProxy[]>;
  /** One per proxy to the broker: the consuming channel is on one of them. */
  readonly breakers: ChannelBreaker[];
  server: ServerProcess | undefined;
  /** Killed by the run and not started again yet. */
  killed = false;
  /** Only the run's own kills and the final stop: any other exit is the app's doing. */
  private expectExit = false;
  private starts = 0;

  constructor(private readonly setup: InstanceSetup) {
    this.spec = setup.spec;
    this.proxies = setup.proxies;
    this.breakers = setup.proxies.rabbitmq.map(
      (proxy) => new ChannelBreaker(proxy, setup.onBrokerClose),
    );
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.setup.port}`;
  }

  start(): void {
    this.expectExit = false;
    this.killed = false;
    this.starts++;
    const server = startServer({
      args: [join(this.setup.repoRoot, 'dist', 'main.js')],
      cwd: this.setup.repoRoot,
      port: this.setup.port,
      env: this.hasSlowSteps
        ? { ...this.setup.env, FAULT_DELAYS_SWITCH_FILE: this.switchFile }
        : this.setup.env,
      // One log per start: a restart must not truncate what the killed process wrote.
      logPath: join(this.setup.logDir, `${this.spec.name}.${this.starts}.log`),
    });
    this.server = server;
    void server.closed.then(async (exit) => {
      if (this.expectExit || this.server !== server) return;
      this.setup.onExit(
        `exited by itself (code ${exit.code}, signal ${exit.signal}); started again`,
      );
      await sleep(RESTART_AFTER_EXIT_MS);
      if (!this.expectExit && this.server === server) this.start();
    });
  }

  async kill(): Promise<void> {
    this.expectExit = true;
    this.killed = true;
    this.server?.child.kill('SIGKILL');
    await this.server?.closed;
  }

  signal(signal: 'SIGSTOP' | 'SIGCONT' | 'SIGUSR2'): void {
    this.server?.child.kill(signal);
  }

  /** Without FAULT_DELAYS the app does not listen for SIGUSR2, whose default ends the process. */
  private get hasSlowSteps(): boolean {
    return this.setup.env.FAULT_DELAYS !== undefined;
  }

  /** Its slow steps' state (see FaultInjectorService): read by the process at each start and SIGUSR2. */
  private get switchFile(): string {
    return join(this.setup.logDir, `${this.spec.name}.slow-steps`);
  }

  setSlowSteps(on: boolean): void {
    if (!this.hasSlowSteps) return;
    writeFileSync(this.switchFile, on ? 'on\n' : 'off\n');
    this.signal('SIGUSR2');
  }

  async stop(): Promise<void> {
    this.expectExit = true;
    this.signal('SIGCONT');
    if (this.server) await stopServer(this.server);
  }

  /** Polls /health/ready until it is 200 (MySQL, Redis and the broker reachable). */
  async waitReady(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const response = await fetch(`${this.baseUrl}/health/ready`, {
        signal: AbortSignal.timeout(2_000),
      }).catch(() => undefined);
      await response?.body?.cancel();
      if (response?.status === 200) return true;
      await sleep(READY_POLL_MS);
    }
    return false;
  }
}

export class ChaosSystem implements FaultSurface {
  readonly events: SystemEvent[] = [];
  readonly brokerCloses: BrokerCloseEvent[] = [];
  /** The run's own connections, straight to the stores (no proxy): for the checker. */
  readonly redisClient: RedisClient;
  readonly mysql: Pool;
  private redisDown = false;
  /** The proxies slowed down now, each with what restores it. */
  private readonly slowed = new Map<TcpProxy, () => void>();

  private constructor(
    private readonly options: SystemOptions,
    /** The private redis-server; null on the clustered engines (their Redis Cluster instead). */
    private readonly redis: PrivateRedis | null,
    private readonly redisDir: string,
    readonly instances: AppInstance[],
    mysqlUrl: string,
  ) {
    const cluster = options.cluster?.redis;
    this.redisClient = cluster
      ? new Cluster(
          cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
          {
            lazyConnect: true,
            redisOptions: { maxRetriesPerRequest: 1, commandTimeout: CHECKER_COMMAND_TIMEOUT_MS },
          },
        )
      : new Redis(redis!.url, {
          maxRetriesPerRequest: 1,
          lazyConnect: true,
          commandTimeout: CHECKER_COMMAND_TIMEOUT_MS,
        });
    this.redisClient.on('error', () => undefined);
    this.mysql = createPool({ uri: mysqlUrl, connectionLimit: 4 });
  }

  static async start(options: SystemOptions): Promise<ChaosSystem> {
    if (!options.name.includes('chaos')) throw new Error(`not a chaos store name: ${options.name}`);
    const logDir = join(options.outDir, 'logs');
    mkdirSync(logDir, { recursive: true });
    // A new folder for the snapshot a restart with data starts from: an earlier run's must not load.
    const redisDir = mkdtempSync(join(tmpdir(), 'seckill-chaos-redis-'));
    const { cluster } = options;
    if (!cluster) {
      await freshDatabase(options.name, join(options.repoRoot, 'dist', 'migrations', '*.js'));
      await freshVhost(options.name);
    }
    const redis = cluster ? null : await PrivateRedis.start({ dir: redisDir });
    const instances: AppInstance[] = [];
    // The run's own reads go to the primary, wherever it is.
    const checkerUrl = cluster
      ? `mysql://root:@127.0.0.1:${(await cluster.primaryProxy()).port}/${options.name}`
      : databaseUrl(options.name);
    // Reads that may lag, on the replica (wherever it is), for the instances that serve the API.
    const replicaUrl = cluster
      ? `mysql://root:@127.0.0.1:${(await cluster.replicaProxy()).port}/${options.name}`
      : undefined;
    const system = new ChaosSystem(options, redis, redisDir, instances, checkerUrl);
    for (const spec of options.instances) {
      const proxies = {} as Record<Service, TcpProxy[]>;
      const urls = {} as Record<Service, string>;
      for (const service of SERVICES) {
        const through = await system.proxiesTo(service);
        proxies[service] = through.map(({ proxy }) => proxy);
        urls[service] = through.map(({ url }) => url).join(',');
      }
      // On the Redis Cluster: its nodes through this instance's proxies, the slot map's
      // addresses (the nodes' own) mapped to them.
      const redisEnv = cluster
        ? {
            REDIS_CLUSTER_NODES: proxies.redis.map((proxy) => `127.0.0.1:${proxy.port}`).join(','),
            REDIS_CLUSTER_NAT_MAP: cluster.redis.ports
              .map((port, i) => `127.0.0.1:${port}=127.0.0.1:${proxies.redis[i].port}`)
              .join(','),
          }
        : { REDIS_URL: urls.redis };
      instances.push(
        new AppInstance({
          spec,
          port: await freePortBelowEphemeral(),
          proxies,
          repoRoot: options.repoRoot,
          env: {
            ...process.env,
            ...options.env,
            APP_ROLE: spec.role,
            ...redisEnv,
            RABBITMQ_URL: urls.rabbitmq,
            DATABASE_URL: urls.mysql,
            ...(cluster ? { RABBITMQ_QUORUM_SIZE: '3' } : {}),
            ...(replicaUrl && spec.role !== 'worker' ? { DATABASE_REPLICA_URL: replicaUrl } : {}),
            JWT_SECRET: options.jwtSecret,
          },
          logDir,
          onExit: (what) =>
            system.events.push({ atMs: Math.round(options.now()), instance: spec.name, what }),
          onBrokerClose: (close) =>
            system.brokerCloses.push({
              ...close,
              atMs: Math.round(options.now()),
              instance: spec.name,
            }),
        }),
      );
    }
    await system.redisClient.connect();
    for (const instance of instances) instance.start();
    if (!(await system.waitAllReady(120_000))) {
      await system.stop();
      throw new Error(`the app instances were not ready within 120 s; see ${logDir}`);
    }
    return system;
  }

  /**
   * One instance's proxies to a service and the URLs through them: to the private Redis, the
   * machine's broker and MySQL; or with the clusters to each Redis node (in the cluster's order
   * of ports), to each broker node and to the primary (following it across a failover).
   */
  private async proxiesTo(service: Service): Promise<{ proxy: TcpProxy; url: string }[]> {
    const { cluster, name } = this.options;
    if (service === 'redis' && cluster) {
      return Promise.all(
        cluster.redis.ports.map(async (port) => {
          const proxy = await TcpProxy.start('127.0.0.1', port);
          return { proxy, url: `redis://127.0.0.1:${proxy.port}/0` };
        }),
      );
    }
    if (service === 'redis') return [await proxyInFront(this.redis!.url, 6379)];
    if (!cluster) {
      return [
        service === 'rabbitmq'
          ? await proxyInFront(rabbitUrl(name), 5672)
          : await proxyInFront(databaseUrl(name), 3306),
      ];
    }
    if (service === 'mysql') {
      const proxy = await cluster.primaryProxy();
      return [{ proxy, url: `mysql://root:@127.0.0.1:${proxy.port}/${name}` }];
    }
    return Promise.all(
      cluster.brokerPorts.map(async (port) => {
        const proxy = await TcpProxy.start('127.0.0.1', port);
        return { proxy, url: `amqp://guest:guest@127.0.0.1:${proxy.port}/` };
      }),
    );
  }

  /** The instances that serve the API (role api or all). */
  get serving(): AppInstance[] {
    return this.instances.filter((instance) => instance.spec.role !== 'worker');
  }

  async waitAllReady(timeoutMs: number): Promise<boolean> {
    const ready = await Promise.all(this.instances.map((i) => i.waitReady(timeoutMs)));
    return ready.every(Boolean);
  }

  private instance(name: string): AppInstance {
    const found = this.instances.find((instance) => instance.spec.name === name);
    if (!found) throw new Error(`no instance ${name}`);
    return found;
  }

  private proxiesOf(name: string, service: Service): TcpProxy[] {
    const of = name === 'all' ? this.instances : [this.instance(name)];
    return of.flatMap((instance) => instance.proxies[service]);
  }

  killInstance(name: string): Promise<void> {
    return this.instance(name).kill();
  }

  restartInstance(name: string): void {
    this.instance(name).start();
  }

  pauseInstance(name: string): void {
    this.instance(name).signal('SIGSTOP');
  }

  resumeInstance(name: string): void {
    this.instance(name).signal('SIGCONT');
  }

  setSlowSteps(name: string, on: boolean): void {
    this.instance(name).setSlowSteps(on);
  }

  async killRedis(keepData: boolean): Promise<void> {
    if (this.options.cluster) {
      await this.options.cluster.killRedisMaster(keepData);
      return;
    }
    const redis = this.redis!;
    this.redisDown = true;
    // A SAVE that fails (the client still reconnecting) leaves an older snapshot or none: still a
    // restart, from a staler copy.
    if (keepData) await this.redisClient.save().catch(() => undefined);
    else redis.forgetSnapshot();
    await redis.kill();
  }

  async startRedis(): Promise<void> {
    if (this.options.cluster) return this.options.cluster.startRedisNode();
    await this.redis!.up();
    this.redisDown = false;
  }

  async pauseRedis(): Promise<void> {
    if (this.options.cluster) await this.options.cluster.pauseRedisMaster();
    else this.redis!.pause();
  }

  resumeRedis(): void {
    if (this.options.cluster) this.options.cluster.resumeRedisNode();
    else this.redis!.resume();
  }

  cutProxies(name: string, service: Service): void {
    for (const proxy of this.proxiesOf(name, service)) proxy.down();
  }

  restoreProxies(name: string, service: Service): void {
    for (const proxy of this.proxiesOf(name, service)) proxy.up();
  }

  stallProxies(name: string, service: Service): void {
    for (const proxy of this.proxiesOf(name, service)) proxy.stall();
  }

  resumeProxies(name: string, service: Service): void {
    for (const proxy of this.proxiesOf(name, service)) proxy.resume();
  }

  silenceProxies(name: string, service: Service): void {
    for (const proxy of this.proxiesOf(name, service)) proxy.silenceOpen();
  }

  slowProxies(name: string, service: Service): void {
    for (const proxy of this.proxiesOf(name, service)) {
      if (!this.slowed.has(proxy)) this.slowed.set(proxy, slowLink(proxy));
    }
  }

  restoreSpeed(name: string, service: Service): void {
    for (const proxy of this.proxiesOf(name, service)) {
      this.slowed.get(proxy)?.();
      this.slowed.delete(proxy);
    }
  }

  closeBrokerConnections(): Promise<void> {
    const reason = 'chaos: broker connections closed';
    const { cluster } = this.options;
    return cluster
      ? cluster.closeBrokerConnections(reason)
      : closeVhostConnections(this.options.name, reason);
  }

  async breakConsumerChannel(name: string): Promise<boolean> {
    const breakers = this.instance(name).breakers;
    const deadline = Date.now() + CHANNEL_WAIT_MS;
    do {
      for (const breaker of breakers) {
        if (breaker.break((count) => Math.floor(Math.random() * count))) return true;
      }
      await sleep(READY_POLL_MS);
    } while (Date.now() < deadline);
    return false;
  }

  private get cluster(): ClusterStores {
    if (!this.options.cluster) throw new Error('a cluster fault without --cluster');
    return this.options.cluster;
  }

  killBrokerNode(): Promise<string> {
    return this.cluster.killBrokerNode(`${this.options.name}.orders`);
  }

  startBrokerNode(): Promise<void> {
    return this.cluster.startBrokerNode();
  }

  killDatabasePrimary(): Promise<void> {
    return this.cluster.killPrimary();
  }

  failOverDatabase(): Promise<void> {
    return this.cluster.failOver();
  }

  /** Undoes whatever a fault may have left (the nemesis heals its own; this is the safety net). */
  async healEverything(): Promise<void> {
    this.redis?.resume();
    if (this.redisDown) await this.startRedis();
    await this.options.cluster?.heal();
    for (const restore of this.slowed.values()) restore();
    this.slowed.clear();
    for (const instance of this.instances) {
      for (const proxy of Object.values(instance.proxies).flat()) {
        proxy.resume();
        proxy.up();
      }
      instance.signal('SIGCONT');
      instance.setSlowSteps(false);
      if (instance.killed) instance.start();
    }
  }

  async stop(): Promise<void> {
    await this.healEverything();
    await Promise.all(this.instances.map((instance) => instance.stop()));
    for (const instance of this.instances) {
      for (const proxy of Object.values(instance.proxies).flat()) await proxy.close();
    }
    this.redisClient.disconnect();
    await this.mysql.end();
    await this.redis?.kill();
    rmSync(this.redisDir, { recursive: true, force: true });
    if (this.options.cluster) {
      await this.options.cluster.stop();
    } else {
      await deleteVhost(this.options.name).catch(() => undefined);
      await dropDatabase(this.options.name).catch(() => undefined);
    }
  }
}
