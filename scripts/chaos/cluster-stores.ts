// The clustered engines of `npm run chaos -- --cluster`: a RabbitMQ cluster of three nodes of its
// own (quorum queues with a replica on each), a MariaDB primary with a semi-synchronous replica of
// its own (scripts/lib/), in place of the machine's broker and server, and a Redis Cluster of three
// masters with a replica each in place of the private redis-server. Every client reaches the
// database through proxies that follow the primary (or the replica) across a failover, as a
// virtual address or a database proxy does in production; the broker's nodes are listed to each
// instance, which moves to another when its node dies; the Redis nodes are reached through
// proxies too, named to the app by REDIS_CLUSTER_NAT_MAP.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { freshDatabase } from '../../bench/lib/stores.js';
import { PrivateRedisCluster } from '../../test/support/private-redis.js';
import { TcpProxy } from '../../test/support/tcp-proxy.js';
import {
  byRole,
  follow,
  killServer,
  promoteReplica,
  replicaStatus,
  sql,
  startPair,
  startServer,
  stopPair,
  type MariaPair,
} from '../lib/mariadb-pair.js';
import {
  closeAllConnections,
  killNode,
  queueLeader,
  startCluster,
  startNode,
  stopCluster,
  type RabbitCluster,
  type RabbitNode,
} from '../lib/rabbitmq-cluster.js';
import { clusterIsOk } from '../lib/redis-cluster.js';
import { waitFor } from '../../test/support/wait-for.js';

/** How far behind in applying the replica is when the primary dies (see killPrimary). */
const LAG_AT_KILL_MS = 1_000;
/**
 * How long a Redis master may be unreachable before its replica takes its slots over: short, so
 * that a kill or a pause of a few seconds is a failover; long enough that two busy cores do not
 * fail a healthy master over.
 */
const REDIS_NODE_TIMEOUT_MS = 3_000;
/** How long a Redis node started again may take to rejoin before the heal gives up waiting. */
const REDIS_REJOIN_MS = 30_000;

export class ClusterStores {
  private readonly followPrimary = new Set<TcpProxy>();
  private readonly followReplica = new Set<TcpProxy>();
  /** The broker node killed and not started again yet. */
  private downNode: RabbitNode | null = null;
  private primaryDown = false;
  /** The Redis node killed and not started again yet, and the one paused. */
  private redisDown: { port: number; keepData: boolean } | null = null;
  private redisPaused: number | null = null;
  private stopped = false;

  private constructor(
    private pair: MariaPair,
    readonly rabbit: RabbitCluster,
    readonly redis: PrivateRedisCluster,
  ) {}

  /** The three clusters up, the database `name` made on the primary with the migrations run. */
  static async start(name: string, migrationsGlob: string): Promise<ClusterStores> {
    const rabbit = await startCluster(mkdtempSync(join(tmpdir(), 'seckill-chaos-rabbitmq-')), 3);
    let pair: MariaPair | undefined;
    try {
      pair = await startPair(mkdtempSync(join(tmpdir(), 'seckill-chaos-mariadb-')));
      const redis = await PrivateRedisCluster.start({
        replicas: 1,
        nodeTimeoutMs: REDIS_NODE_TIMEOUT_MS,
      });
      const stores = new ClusterStores(pair, rabbit, redis);
      await freshDatabase(name, migrationsGlob, stores.serverUrl('primary')).catch(
        async (error: unknown) => {
          await redis.stop();
          throw error;
        },
      );
      return stores;
    } catch (error) {
      await stopCluster(rabbit).catch(() => undefined);
      if (pair) await stopPair(pair).catch(() => undefined);
      throw error;
    }
  }

  /** `mysql://root:@127.0.0.1:<port>` of the server in that role now. */
  private serverUrl(role: 'primary' | 'replica'): string {
    return `mysql://root:@127.0.0.1:${byRole(this.pair, role).port}`;
  }

  /** A proxy that reaches the primary now and after every failover. */
  async primaryProxy(): Promise<TcpProxy> {
    const proxy = await TcpProxy.start('127.0.0.1', byRole(this.pair, 'primary').port);
    this.followPrimary.add(proxy);
    return proxy;
  }

  /** A proxy that reaches the replica now and after every failover (the old primary, rejoined). */
  async replicaProxy(): Promise<TcpProxy> {
    const proxy = await TcpProxy.start('127.0.0.1', byRole(this.pair, 'replica').port);
    this.followReplica.add(proxy);
    return proxy;
  }

  /** Each broker node's AMQP port, in the nodes' order. */
  get brokerPorts(): number[] {
    return this.rabbit.nodes.map((node) => node.port);
  }

  /** Kills the node that leads the orders queue (another when it cannot be told). */
  async killBrokerNode(ordersQueue: string): Promise<string> {
    const [via] = this.rabbit.nodes;
    const leader = await queueLeader(this.rabbit, via, ordersQueue).catch(() => undefined);
    const victim = leader ?? this.rabbit.nodes[Math.floor(Math.random() * 3)];
    this.downNode = victim;
    await killNode(victim);
    return victim.name;
  }

  async startBrokerNode(): Promise<void> {
    const node = this.downNode;
    if (!node) return;
    await startNode(this.rabbit, node);
    this.downNode = null;
  }

  async closeBrokerConnections(reason: string): Promise<void> {
    const via = this.rabbit.nodes.find((node) => node !== this.downNode)!;
    await closeAllConnections(this.rabbit, via, reason);
  }

  /**
   * The primary SIGKILLed, as a crash: the clients' connections to it break. The replica has
   * fallen behind in applying first (its SQL thread stopped LAG_AT_KILL_MS before, as a busy
   * replica's one thread falls behind; it still receives every commit): the promotion must apply
   * what it holds, or the orders committed meanwhile are lost. Refused (nothing done) when the
   * replica is not following: a failover then would lose what it lacks.
   */
  async killPrimary(): Promise<void> {
    const replica = byRole(this.pair, 'replica');
    const status = await replicaStatus(replica);
    if (status.io !== 'Yes' || status.sql !== 'Yes') {
      throw new Error(`the replica is not following (${status.error}): no failover`);
    }
    await sql(replica, 'STOP SLAVE SQL_THREAD');
    await sleep(LAG_AT_KILL_MS);
    this.primaryDown = true;
    await killServer(byRole(this.pair, 'primary'));
  }

  /**
   * The failover (scripts/lib/mariadb-pair.ts promoteReplica): the replica applies what it
   * received and becomes the primary, the proxies move to it, and the dead server is started
   * again as its replica, for the next failover.
   */
  async failOver(): Promise<void> {
    if (!this.primaryDown) {
      // A kill that failed after the replica stopped applying left it so.
      await sql(byRole(this.pair, 'replica'), 'START SLAVE SQL_THREAD').catch(() => undefined);
      return;
    }
    this.pair = await promoteReplica(this.pair);
    for (const proxy of this.followPrimary) proxy.retarget(byRole(this.pair, 'primary').port);
    this.primaryDown = false;
    const rejoining = byRole(this.pair, 'replica');
    await startServer(rejoining);
    await follow(rejoining, byRole(this.pair, 'primary'));
    for (const proxy of this.followReplica) proxy.retarget(rejoining.port);
  }

  /**
   * SIGKILLs a master of the Redis Cluster, one of those serving slots now, drawn at random; with
   * `keepData`, after it wrote a snapshot (a SAVE that fails leaves an older one or none). Held
   * past the node timeout, its replica takes its slots over, without what it had not received
   * yet. Returns the node's port.
   */
  async killRedisMaster(keepData: boolean): Promise<number> {
    const masters = await this.redis.masters();
    const port = masters[Math.floor(Math.random() * masters.length)];
    if (keepData) await this.redis.save(port).catch(() => undefined);
    this.redisDown = { port, keepData };
    await this.redis.kill(port);
    console.error(`chaos: redis master 127.0.0.1:${port} killed`);
    return port;
  }

  /**
   * Starts the killed node again (from the snapshot it saved, or empty), and waits until every
   * node says the cluster is whole: back as the master of its slots when no replica took them
   * over meanwhile, else as the replica of the one that did.
   */
  async startRedisNode(): Promise<void> {
    if (this.redisDown === null) return;
    const { port, keepData } = this.redisDown;
    await this.redis.up(port, { keepData });
    this.redisDown = null;
    await waitFor(() => clusterIsOk(this.redis.ports), {
      timeoutMs: REDIS_REJOIN_MS,
      intervalMs: 200,
      what: `the Redis Cluster whole again after 127.0.0.1:${port} restarted`,
    });
  }

  /** SIGSTOPs a master serving slots now, drawn at random: past the node timeout, a failover. */
  async pauseRedisMaster(): Promise<number> {
    const masters = await this.redis.masters();
    const port = masters[Math.floor(Math.random() * masters.length)];
    this.redisPaused = port;
    this.redis.pause(port);
    console.error(`chaos: redis master 127.0.0.1:${port} paused`);
    return port;
  }

  resumeRedisNode(): void {
    if (this.redisPaused !== null) this.redis.resume(this.redisPaused);
    this.redisPaused = null;
  }

  /** Undoes what a fault left: a node down started, a dead primary failed over. */
  async heal(): Promise<void> {
    this.resumeRedisNode();
    await this.startRedisNode();
    await this.startBrokerNode();
    await this.failOver();
  }

  /** Once: the system's stop and the run's cleanup both call it. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const proxy of [...this.followPrimary, ...this.followReplica]) await proxy.close();
    await stopCluster(this.rabbit).catch(() => undefined);
    await this.redis.stop().catch(() => undefined);
    await stopPair(this.pair);
  }
}
