import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis, RedisOptions } from 'ioredis';

/**
 * The service's Redis: one server (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). ioredis'
 * `Redis` and `Cluster` share the command API (both are a `RedisCommander`), so the code that
 * sends commands takes either; what differs (which server a command reaches, SCAN, INFO, a second
 * connection for pub/sub) goes through the helpers below.
 */
export type RedisClient = Redis | Cluster;

/** Number of hash slots of a Redis Cluster. */
export const SLOT_COUNT = 16_384;

export function isCluster(client: RedisClient): client is Cluster {
  return client.isCluster;
}

/** The cluster slot of a key (its `{tag}` when it has one), as Redis computes it. */
export function keySlot(key: string): number {
  return calculateSlot(key);
}

/**
 * Which keys something concerns: every key (`all`, as on a single Redis), or the keys of these
 * cluster slots.
 */
export type SlotScope = 'all' | ReadonlySet<number>;

export function keyInScope(scope: SlotScope, key: string): boolean {
  return scope === 'all' || scope.has(keySlot(key));
}

/** `scope` without `minus`; null when nothing is left. */
export function scopeWithout(scope: SlotScope, minus: SlotScope): SlotScope | null {
  if (minus === 'all') return null;
  if (scope === 'all') return scope;
  const left = new Set([...scope].filter((slot) => !minus.has(slot)));
  return left.size > 0 ? left : null;
}

/** `host:port`, as ioredis names a cluster node (in `Cluster.slots` and its connection pool). */
export function nodeKey(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

/** The servers that hold data: the one server, or the cluster's masters the client knows now. */
export function masterNodes(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

/** A second connection to the same Redis (a Cluster keeps its seeds and options). */
export function duplicateClient(
  client: RedisClient,
  override: Partial<RedisOptions> = {},
): RedisClient {
  if (!isCluster(client)) return client.duplicate(override);
  const { enableOfflineQueue } = override;
  return client.duplicate([], {
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    redisOptions: { ...client.options.redisOptions, ...override },
  });
}

/**
 * Every key matching `pattern`, on every master (SCAN reaches one server: on a cluster each master
 * holds its own slots' keys). Masters that cannot be reached make it throw: a partial answer would
 * look like a complete one.
 */
export async function scanKeys(client: RedisClient, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  for (const node of masterNodes(client)) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
  }
  return keys;
}
