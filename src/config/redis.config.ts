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
  /** How often the watchdog checks each server's run_id for a restart. */
  watchIntervalMs: number;
}

/**
 * REDIS_CLUSTER_NODES: comma-separated `host:port` seeds (an IPv6 address in brackets); null when
 * unset. A seed that cannot be a node's address stops the boot rather than a client retrying it.
 */
function readClusterNodes(env: Env): RedisNode[] | null {
  const entries = readList(env, 'REDIS_CLUSTER_NODES');
  if (entries.length === 0) return null;
  return entries.map((entry) => {
    const match =
      /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})$/.exec(entry);
    const port = Number(match?.[2]);
    const host = match?.[1].replace(/^\[(.*)\]$/, '$1') ?? '';
    if (!match || port < 1 || port > 65_535 || (match[1].startsWith('[') && isIP(host) !== 6)) {
      throw new ConfigValidationError(
        `REDIS_CLUSTER_NODES must list host:port seeds separated by commas (e.g. 10.0.0.1:7000,10.0.0.2:7000), got "${entry}"`,
      );
    }
    return { host, port };
  });
}

export const redisConfig = configNamespace('redis', (env): RedisConfig => ({
  url: readUrl(env, 'REDIS_URL', 'redis://127.0.0.1:6379/0', ['redis:', 'rediss:']),
  clusterNodes: readClusterNodes(env),
  watchIntervalMs: readInt(env, 'REDIS_WATCH_INTERVAL_MS', 1_000, 100, 60_000),
}));
