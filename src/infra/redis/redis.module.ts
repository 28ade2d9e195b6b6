import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { redisConfig, type RedisConfig } from '../../config/redis.config.js';
import { LuaScriptsService } from './lua-scripts.service.js';
import type { RedisClient } from './redis-client.js';
import { REDIS_CLIENT, REDIS_COMMAND_TIMEOUT_MS } from './redis.constants.js';
import { RedisHealthService } from './redis-health.service.js';
import { RedisLocksService } from './redis-locks.service.js';
import { StreamSlotsService } from './stream-slots.service.js';
import { RedisSubscriberService } from './redis-subscriber.service.js';
import { RedisWatchdogService } from './redis-watchdog.service.js';

/** Options of every connection to a Redis server, the one server or each cluster node. */
const CONNECTION_OPTIONS = {
  maxRetriesPerRequest: 1,
  connectTimeout: 5_000,
  commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
} satisfies RedisOptions;

/**
 * REDIS_CLUSTER_NODES set: ioredis' Cluster client over those seeds (it learns the other nodes
 * and the slot map from them); else one connection to REDIS_URL.
 */
function createClient(redis: RedisConfig): RedisClient {
  const retry = (attempt: number) => Math.min(attempt * 200, 2_000);
  if (redis.clusterNodes) {
    return new Cluster(redis.clusterNodes, {
      enableOfflineQueue: true,
      // Not on a cluster: an auto-pipeline gathers the commands of many slots bound for one node
      // and meets a MOVED or a lost connection as one batch (ioredis #2075), so a failover fails
      // its writes, and under the random checker's master kills commands got replies that were
      // not theirs (an order-barrier tick read a number, standings read NOT_JOINED, 202s without
      // an order). Each command alone follows a MOVED and fails alone.
      enableAutoPipelining: false,
      clusterRetryStrategy: retry,
      // A command for a master that is down, or a slot no master serves, fails at once (503)
      // rather than being retried every 100 ms up to 16 times: ioredis' defaults made a purchase
      // wait ~2 s for its 503 while a master was down. MOVED (resharding) is still followed.
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 0,
      // A node that drops is not redialled on its own: the client learns the slot map again
      // (on a MOVED, or when the watchdog asks) and connects to whoever serves the slots.
      redisOptions: CONNECTION_OPTIONS,
      // Nodes that announce addresses this service cannot dial (NAT, containers, proxies).
      ...(Object.keys(redis.clusterNatMap).length > 0 ? { natMap: redis.clusterNatMap } : {}),
    });
  }
  return new Redis(redis.url, {
    ...CONNECTION_OPTIONS,
    enableOfflineQueue: true,
    // Commands issued in the same tick (a crowd's throttle hits, locks, deducts) go out in one
    // socket write: the per-command write was a fifth of the purchase route's CPU.
    enableAutoPipelining: true,
    retryStrategy: retry,
  });
}

/** What the module provides on top of the client, every one exported. */
const SERVICES = [
  LuaScriptsService,
  RedisWatchdogService,
  RedisLocksService,
  RedisSubscriberService,
  RedisHealthService,
  StreamSlotsService,
];

@Global()
@Module({
  providers: [
    {
      provide: REDIS_CLIENT,
      inject: [redisConfig.KEY],
      useFactory: (redis: RedisConfig): RedisClient => {
        const logger = new Logger('Redis');
        const client = createClient(redis);
        client.on('error', (error: Error) => logger.warn(`redis error: ${error.message}`));
        // The offline queue holds the commands of the boot until Redis first answers. After
        // that, a command sent while Redis is unreachable fails at once (the caller answers 503)
        // rather than waiting for reconnects and the command timeout: a dependency known to be
        // down must cost a request nothing, or a crowd piles up connections behind it. (On a
        // cluster this is the cluster's queue: a command for a master that is down fails, the
        // other masters' slots go on.)
        client.once('ready', () => {
          client.options.enableOfflineQueue = false;
        });
        return client;
      },
    },
    ...SERVICES,
  ],
  exports: [REDIS_CLIENT, ...SERVICES],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
