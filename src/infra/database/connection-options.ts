import type { DataSourceOptions } from 'typeorm';
import { ConsumerBeatEntity } from './entities/consumer-beat.entity.js';
import { FallbackBarrierEntity } from './entities/fallback-barrier.entity.js';
import { FallbackDrainEntity } from './entities/fallback-drain.entity.js';
import { GoodsEntity } from './entities/goods.entity.js';
import { OrderEntity } from './entities/order.entity.js';
import { VoidedRequestEntity } from './entities/voided-request.entity.js';
import type { DatabaseTarget } from './ensure-database.js';
import { mysql2WithUtcSessions } from './utc-sessions.js';

const ENTITIES = [
  GoodsEntity,
  OrderEntity,
  VoidedRequestEntity,
  ConsumerBeatEntity,
  FallbackBarrierEntity,
  FallbackDrainEntity,
];

/**
 * How the app talks to a MySQL server, the primary or a replica alike: the same entities, UTC
 * sessions and number handling, so that a row read on either is the same object.
 */
export function connectionOptions(
  target: DatabaseTarget,
  pool: { connectionLimit: number; connectTimeoutMs: number },
) {
  return {
    ...target,
    entities: ENTITIES,
    synchronize: false,
    // Sessions in UTC too, so that MySQL's NOW(3) and CURRENT_TIMESTAMP(3) are.
    driver: mysql2WithUtcSessions,
    timezone: 'Z',
    dateStrings: false,
    supportBigNumbers: true,
    bigNumberStrings: false,
    extra: {
      connectionLimit: pool.connectionLimit,
      enableKeepAlive: true,
      connectTimeout: pool.connectTimeoutMs,
    },
  } satisfies DataSourceOptions;
}
