import { Cluster, Redis } from 'ioredis';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { keySlot } from '../../src/infra/redis/redis-client.js';
import { portIsFree } from '../../scripts/lib/ports.js';
import {
  clusterIsOk,
  clusterNodeArgs,
  createCluster,
  freeClusterPorts,
} from '../../scripts/lib/redis-cluster.js';
import { ephemeralRedisArgs } from '../../scripts/lib/redis-server.js';
import type { Stores } from './harness.js';
import { waitFor } from './wait-for.js';

/** Resolves once something accepts TCP connections on the port. */
export function listening(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Kills a child outright, as a crash would, and waits for it to be gone. */
export async function killChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/**
 * A throwaway redis-server of the test's own, on a port below the ephemeral range, that the test
 * may kill and start again empty without disturbing the machine's shared Redis.
 */
export class PrivateRedis {
  private process?: ChildProcess;

  private constructor(
    readonly port: number,
    private readonly dir?: string,
  ) {}

  /** With `dir`, a `SAVE` writes a snapshot there that the next `up()` loads (a stale restart). */
  static async start(options: { dir?: string } = {}): Promise<PrivateRedis> {
    let port = 0;
    // A port something else listens on would pass the readiness check with that server.
    while (port === 0 || !(await portIsFree(port)))
      port = 21_000 + Math.floor(Math.random() * 8_000);
    const redis = new PrivateRedis(port, options.dir);
    await redis.up();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /** Starts the server (empty, or from its snapshot if it has one) and waits until it answers. */
  async up(): Promise<void> {
    // A second server on the port would fail to bind, and this one would lose track of the first.
    if (this.process && this.process.exitCode === null && this.process.signalCode === null) return;
    this.process = spawn(
      'redis-server',
      [
        ...ephemeralRedisArgs(this.port),
        ...(this.dir ? ['--dir', this.dir, '--dbfilename', 'snapshot.rdb'] : []),
      ],
      { stdio: 'ignore' },
    );
    await waitFor(() => listening(this.port), {
      timeoutMs: 10_000,
      what: `redis-server on port ${this.port}`,
    });
  }

  /** Kills it outright, as a crash would. */
  async kill(): Promise<void> {
    await killChild(this.process);
  }

  /** Freezes the process (SIGSTOP), as a long stall would: connections stay open, nothing answers. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  resume(): void {
    this.process?.kill('SIGCONT');
  }

  /** Drops the snapshot in `dir`, so that the next `up()` starts empty. */
  forgetSnapshot(): void {
    if (this.dir) rmSync(join(this.dir, 'snapshot.rdb'), { force: true });
  }
}

/**
 * A throwaway Redis Cluster of the test's own: three masters, with `replicas` replicas each (none
 * by default), on consecutive ports at most 22767 (a node's cluster bus is its port + 10000, and
 * must stay below the ephemeral range), their node files in a temporary folder. A master may be
 * killed and started again empty: it keeps its node id and slots (its node file), and loses its
 * data; with replicas, a killed master's replica takes its slots over after `nodeTimeoutMs`.
 */
export class PrivateRedisCluster {
  private readonly processes = new Map<number, ChildProcess>();

  private constructor(
    readonly ports: number[],
    private readonly dir: string,
    readonly nodeTimeoutMs: number,
  ) {}

  static async start(
    options: { replicas?: number; nodeTimeoutMs?: number } = {},
  ): Promise<PrivateRedisCluster> {
    const replicas = options.replicas ?? 0;
    const cluster = new PrivateRedisCluster(
      await freeClusterPorts(20, 3 * (1 + replicas)),
      mkdtempSync(join(tmpdir(), 'seckill-cluster-')),
      options.nodeTimeoutMs ?? 15_000,
    );
    for (const port of cluster.ports) await cluster.up(port);
    await createCluster(cluster.ports, replicas);
    await cluster.waitUntilOk();
    if (replicas > 0) {
      await waitFor(() => cluster.replicasInSync(replicas), {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: 'every replica in sync with its master',
      });
    }
    return cluster;
  }

  /** Every master has `replicas` replicas online (their initial sync done). */
  private async replicasInSync(replicas: number): Promise<boolean> {
    const infos = await Promise.all(
      this.ports.map(async (port) => {
        const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
        node.on('error', () => undefined);
        try {
          await node.connect();
          return await node.info('replication');
        } catch {
          return '';
        } finally {
          node.disconnect();
        }
      }),
    );
    const masters = infos.filter((info) => /role:master/.test(info));
    return (
      masters.length === 3 &&
      masters.every((info) => (info.match(/^slave\d+:.*state=online/gm) ?? []).length === replicas)
    );
  }

  /** REDIS_CLUSTER_NODES for an app on this cluster. */
  get seeds(): string {
    return this.ports.map((port) => `127.0.0.1:${port}`).join(',');
  }

  /** A client of the test's own (for its Stores). */
  client(): Cluster {
    return new Cluster(this.ports.map((port) => ({ host: '127.0.0.1', port })));
  }

  /**
   * Starts the node on `port` and waits until it answers: empty, or with `keepData` from its
   * snapshot file if it has one (its own SAVE, or the last full sync it had as a replica).
   */
  async up(port: number, options: { keepData?: boolean } = {}): Promise<void> {
    const running = this.processes.get(port);
    // A second server on the port would fail to bind, and this one would lose track of the first.
    if (running && running.exitCode === null && running.signalCode === null) return;
    if (!options.keepData) rmSync(join(this.dir, `dump-${port}.rdb`), { force: true });
    this.processes.set(
      port,
      spawn(
        'redis-server',
        [...ephemeralRedisArgs(port), ...clusterNodeArgs(port, this.dir, this.nodeTimeoutMs)],
        { stdio: 'ignore' },
      ),
    );
    await waitFor(() => listening(port), { timeoutMs: 10_000, what: `redis-server on ${port}` });
  }

  /** Waits until every node says the cluster is whole. */
  async waitUntilOk(): Promise<void> {
    await waitFor(() => clusterIsOk(this.ports), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'cluster_state:ok on every node',
    });
  }

  /** The port of the master that serves `key`'s slot, and its replicas', asked of a live node. */
  async servers(key: string): Promise<{ master: number; replicas: number[] }> {
    const slot = keySlot(key);
    for (const port of this.ports) {
      const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
      node.on('error', () => undefined);
      try {
        await node.connect();
        const range = (await node.cluster('SLOTS')).find(
          ([from, to]) => slot >= from && slot <= to,
        );
        if (!range?.[2]) throw new Error(`no master serves slot ${slot}`);
        return {
          master: range[2][1],
          replicas: range
            .slice(3)
            .flatMap((replica) => (Array.isArray(replica) ? [replica[1]] : [])),
        };
      } catch (error) {
        if ((error as Error).message.startsWith('no master')) throw error;
      } finally {
        node.disconnect();
      }
    }
    throw new Error('no node of the cluster answers');
  }

  /** The port of the master that serves `key`'s slot. */
  async masterOf(key: string): Promise<number> {
    return (await this.servers(key)).master;
  }

  /** Kills one node outright, as a crash would. */
  async kill(port: number): Promise<void> {
    await killChild(this.processes.get(port));
  }

  /** Freezes one node (SIGSTOP): its connections stay open, nothing answers, not even its peers. */
  pause(port: number): void {
    this.processes.get(port)?.kill('SIGSTOP');
  }

  resume(port: number): void {
    this.processes.get(port)?.kill('SIGCONT');
  }

  /** Has the node write its snapshot file (what `up(port, { keepData: true })` starts from). */
  async save(port: number): Promise<void> {
    const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    node.on('error', () => undefined);
    try {
      await node.connect();
      await node.save();
    } finally {
      node.disconnect();
    }
  }

  /**
   * The ports of the masters that serve slots now, as the first live node asked sees them
   * (CLUSTER NODES: a master marked failed, or with no slot, is left out).
   */
  async masters(): Promise<number[]> {
    for (const port of this.ports) {
      const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
      node.on('error', () => undefined);
      try {
        await node.connect();
        const lines = String(await node.cluster('NODES')).split('\n');
        return lines.flatMap((line) => {
          const [, address, flags, , , , , , ...slots] = line.split(' ');
          if (!flags?.split(',').includes('master') || /fail/.test(flags) || slots.length === 0) {
            return [];
          }
          return [Number(/:(\d+)@/.exec(address)?.[1])];
        });
      } catch {
        // the next node
      } finally {
        node.disconnect();
      }
    }
    throw new Error('no node of the cluster answers');
  }

  async stop(): Promise<void> {
    for (const port of this.ports) await this.kill(port);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A purchase as a test makes it: the answer's status and body. */
type Buy = (userId: number) => PromiseLike<{ status: number; body: { code?: string } }>;

/**
 * Sells to the first three of five `buyers`, snapshots Redis (the snapshot knows only them), sells
 * to the other two and restarts the server from the snapshot: back with three buyers and the
 * stock of three sales, where the truth is five of each.
 */
export async function restartFromStaleSnapshot(
  redis: PrivateRedis,
  stores: Stores,
  goodsId: number,
  buy: Buy,
  buyers: number[],
): Promise<void> {
  const sell = async (users: number[], orders: number) => {
    for (const userId of users) expect((await buy(userId)).status).toBe(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === orders, {
      what: `${orders} orders`,
    });
  };
  await sell(buyers.slice(0, 3), 3);
  const direct = new Redis(redis.url);
  await direct.save();
  direct.disconnect();
  await sell(buyers.slice(3), 5);
  await redis.kill();
  await redis.up();
}

/**
 * Buys for `userId` until it is accepted, slower than the per-user rate limit (5 a second); every
 * answer before that must have kept the sale closed, taking nothing. Returns how many it sent.
 */
export async function buyUntilReopened(buy: Buy, userId: number): Promise<number> {
  const answers: string[] = [];
  await waitFor(
    async () => {
      const response = await buy(userId);
      answers.push(`${response.status} ${response.body.code ?? ''}`.trim());
      return response.status === 202;
    },
    { timeoutMs: 30_000, intervalMs: 300, what: 'purchases to reopen' },
  );
  for (const answer of answers.slice(0, -1)) {
    expect(['503 UNAVAILABLE', '409 NOT_PREHEATED']).toContain(answer);
  }
  return answers.length;
}

/**
 * Buys for a new buyer each time (`firstUserId`, then the next ids) until one is accepted, slower
 * than the per-user rate limit: each answer before that must have taken nothing, a 503 or a 409
 * DUPLICATE_REQUEST (the purchase lock's Redlock fails while a connection is being replaced, and
 * the check that follows on the new one finds no lock: RedisLocksService.acquire counts that as
 * a holder that just released). Returns how many it sent.
 */
export async function newBuyersUntilAccepted(buy: Buy, firstUserId: number): Promise<number> {
  const answers: string[] = [];
  let userId = firstUserId;
  await waitFor(
    async () => {
      const response = await buy(userId++);
      answers.push(`${response.status} ${response.body.code ?? ''}`.trim());
      return response.status === 202;
    },
    { timeoutMs: 30_000, intervalMs: 300, what: 'purchases to be accepted again' },
  );
  for (const answer of answers.slice(0, -1))
    expect(answer).toMatch(/^(503 |409 DUPLICATE_REQUEST$)/);
  return answers.length;
}
