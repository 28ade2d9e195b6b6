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
const LAST_BASE = 22_765;

/** Three consecutive free ports whose cluster-bus ports are free too. */
export async function freeClusterPorts(attempts = 50): Promise<[number, number, number]> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const base = FIRST_PORT + Math.floor(Math.random() * (LAST_BASE - FIRST_PORT));
    const ports: [number, number, number] = [base, base + 1, base + 2];
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
 * them one at a time).
 */
export function clusterNodeArgs(port: number, dir: string): string[] {
  return [
    '--dir',
    dir,
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${port}.conf`,
    '--cluster-require-full-coverage',
    'no',
  ];
}

/** Joins running nodes into one cluster, every one a master (slots split evenly). */
export async function createCluster(ports: readonly number[]): Promise<void> {
  await promisify(execFile)('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((port) => `127.0.0.1:${port}`),
    '--cluster-replicas',
    '0',
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
