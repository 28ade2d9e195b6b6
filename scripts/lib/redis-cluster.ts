// A throwaway Redis Cluster of three masters on the loopback, as the bench (bench/shards.ts) and
// the tests (test/support/private-redis.ts) start one: the ports, each node's cluster flags, the
// `redis-cli --cluster create` that joins them, and the check that the cluster is whole.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { Redis } from 'ioredis';

import { ScriptError } from './errors.js';
import { portIsFree } from './ports.js';

/** A node's cluster bus listens on its port + 10000, which must stay below the ephemeral range. */
const BUS_OFFSET = 10_000;
const FIRST_PORT = 18_000;
const LAST_BASE = 22_767;

/** `count` (three by default) consecutive free ports whose cluster-bus ports are free too. */
export async function freeClusterPorts(attempts = 50, count = 3): Promise<number[]> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const base = FIRST_PORT + Math.floor(Math.random() * (LAST_BASE - FIRST_PORT - count));
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const free = await Promise.all(
      ports.flatMap((port) => [portIsFree(port), portIsFree(port + BUS_OFFSET)]),
    );
    if (free.every(Boolean)) return ports;
  }
  throw new ScriptError('no three free ports for a private Redis Cluster');
}

/**
 * What makes a throwaway redis-server (`ephemeralRedisArgs`) a node of one: cluster mode, its
 * node file in `dir`. The other masters go on serving their slots while one is down (a test kills
 * them one at a time). `nodeTimeoutMs`: how long a master may be unreachable before its replica
 * takes over (Redis's default is 15 s; a failover test wants it short).
 */
export function clusterNodeArgs(port: number, dir: string, nodeTimeoutMs = 15_000): string[] {
  return [
    '--dir',
    dir,
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${port}.conf`,
    // Its own snapshot file: a SAVE, or a replica's full sync, must not be another node's start.
    '--dbfilename',
    `dump-${port}.rdb`,
    '--cluster-require-full-coverage',
    'no',
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
  ];
}

/**
 * Joins running nodes into one cluster: `replicas` per master (`redis-cli` makes the first
 * ports / (replicas + 1) nodes the masters, slots split evenly, and the rest their replicas).
 */
export async function createCluster(ports: readonly number[], replicas = 0): Promise<void> {
  await promisify(execFile)('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((port) => `127.0.0.1:${port}`),
    '--cluster-replicas',
    String(replicas),
    '--cluster-yes',
  ]);
}

/** True when every node answers and says cluster_state:ok. */
export async function clusterIsOk(ports: readonly number[]): Promise<boolean> {
  const states = await Promise.all(
    ports.map(async (port) => {
      const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
      node.on('error', () => undefined);
      try {
        await node.connect();
        return /cluster_state:ok/.test(await node.cluster('INFO'));
      } catch {
        return false;
      } finally {
        node.disconnect();
      }
    }),
  );
  return states.every(Boolean);
}
