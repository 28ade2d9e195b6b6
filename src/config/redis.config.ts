import { isIP } from 'node:net';
import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readInt, readList, readUrl, type Env } from './env-readers.js';

/** One `host:port` seed of a Redis Cluster. */
export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisConfig {
  url: string;
  /** Seeds of a Redis Cluster (REDIS_CLUSTER_NODES); when set, `url` is not used. */
  clusterNodes: RedisNode[] | null;
  /**
   * REDIS_CLUSTER_NAT_MAP: the address a node announces (`host:port`, as CLUSTER SLOTS gives it)
   * -> the address this service reaches it at; empty when unset.
   */
  clusterNatMap: Record<string, RedisNode>;
  /** How often the watchdog checks each server's run_id for a restart. */
  watchIntervalMs: number;
}

/** `host:port` (an IPv6 address in brackets) as a node; null when it cannot be one. */
function parseNode(entry: string): RedisNode | null {
  const match =
    /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})$/.exec(entry);
  const port = Number(match?.[2]);
  const host = match?.[1].replace(/^\[(.*)\]$/, '$1') ?? '';
  if (!match || port < 1 || port > 65_535 || (match[1].startsWith('[') && isIP(host) !== 6)) {
    return null;
  }
  return { host, port };
}

/**
 * REDIS_CLUSTER_NODES: comma-separated `host:port` seeds; null when unset. A seed that cannot be
 * a node's address stops the boot rather than a client retrying it.
 */
function readClusterNodes(env: Env): RedisNode[] | null {
  const entries = readList(env, 'REDIS_CLUSTER_NODES');
  if (entries.length === 0) return null;
  return entries.map((entry) => {
    const node = parseNode(entry);
    if (!node) {
      throw new ConfigValidationError(
        `REDIS_CLUSTER_NODES must list host:port seeds separated by commas (e.g. 10.0.0.1:7000,10.0.0.2:7000), got "${entry}"`,
      );
    }
    return node;
  });
}

/**
 * REDIS_CLUSTER_NAT_MAP: comma-separated `announced=reached` pairs of `host:port`, for nodes that
 * announce addresses this service cannot dial (behind NAT, in containers, through proxies): the
 * cluster's slot map names a node by what it announces, and ioredis dials what this maps it to.
 * A node left out is dialled as announced. Only with REDIS_CLUSTER_NODES; an address given twice
 * stops the boot, since only one of the two could be meant.
 */
function readClusterNatMap(env: Env, clustered: boolean): Record<string, RedisNode> {
  const entries = readList(env, 'REDIS_CLUSTER_NAT_MAP');
  if (entries.length === 0) return {};
  if (!clustered) {
    throw new ConfigValidationError(
      'REDIS_CLUSTER_NAT_MAP is set without REDIS_CLUSTER_NODES: it maps the addresses of a Redis Cluster',
    );
  }
  const map: Record<string, RedisNode> = {};
  for (const entry of entries) {
    const [from, to, extra] = entry.split('=').map((side) => side.trim());
    const announced = from === undefined ? null : parseNode(from);
    const reached = to === undefined ? null : parseNode(to);
    if (!announced || !reached || extra !== undefined) {
      throw new ConfigValidationError(
        `REDIS_CLUSTER_NAT_MAP must list announced=reached pairs of host:port separated by commas (e.g. 172.17.0.2:7000=10.0.0.1:7000), got "${entry}"`,
      );
    }
    // ioredis looks a node up by `host:port` as CLUSTER SLOTS gives it: an IPv6 host unbracketed.
    const key = `${announced.host}:${announced.port}`;
    if (key in map) {
      throw new ConfigValidationError(`REDIS_CLUSTER_NAT_MAP maps ${from} twice`);
    }
    map[key] = reached;
  }
  return map;
}

export const redisConfig = configNamespace('redis', (env): RedisConfig => {
  const clusterNodes = readClusterNodes(env);
  return {
    url: readUrl(env, 'REDIS_URL', 'redis://127.0.0.1:6379/0', ['redis:', 'rediss:']),
    clusterNodes,
    clusterNatMap: readClusterNatMap(env, clusterNodes !== null),
    watchIntervalMs: readInt(env, 'REDIS_WATCH_INTERVAL_MS', 1_000, 100, 60_000),
  };
});
