import { Module, type FactoryProvider } from '@nestjs/common';
import { availabilityConfig, type AvailabilityConfig } from '../../config/availability.config.js';
import { ORDER_BARRIER_STORES, type BarrierStore } from '../messaging/barrier-store.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { RedisBarrierStore } from '../messaging/redis-barrier.store.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { DatabaseBarrierService } from './database-barrier.service.js';
import { FallbackGateService } from './fallback-gate.service.js';
import {
  ClosedWhileRedisDownPolicy,
  RedisDownPolicy,
  SellThroughDatabasePolicy,
} from './redis-down.policy.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FallbackBarrierEntity } from '../../infra/database/entities/fallback-barrier.entity.js';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { FallbackBarrierRepository } from './fallback-barrier.repository.js';

/** The one reading of REDIS_DOWN_MODE: every Redis-down question is answered by this policy. */
const policy: FactoryProvider<RedisDownPolicy> = {
  provide: RedisDownPolicy,
  inject: [availabilityConfig.KEY, FallbackGateService],
  useFactory: (availability: AvailabilityConfig, gate: FallbackGateService) =>
    availability.redisDownMode === 'database'
      ? new SellThroughDatabasePolicy(gate)
      : new ClosedWhileRedisDownPolicy(),
};

const barrierStores: FactoryProvider<BarrierStore[]> = {
  provide: ORDER_BARRIER_STORES,
  inject: [RedisDownPolicy, RedisBarrierStore, DatabaseBarrierService],
  useFactory: (
    chosen: RedisDownPolicy,
    redis: RedisBarrierStore,
    database: DatabaseBarrierService,
  ) => chosen.barrierStores(redis, database),
};

/**
 * What the service does while Redis is down (REDIS_DOWN_MODE, read here only): the policy
 * (closed, or sell through MySQL), this instance's switch between the stores (FallbackGateService,
 * read through AvailabilityModule's tickets), and the barrier stores the order consumer drains
 * (OrderIngestModule). The purchase MySQL decides alone is SeckillModule's
 * DatabasePurchaseService; FallbackReturnService, which brings the sales MySQL sold back to Redis,
 * is AvailabilityJobsModule's, on the workers.
 */
@Module({
  imports: [
    MetricsModule,
    MessagingModule,
    SaleStoreModule,
    GoodsRepositoryModule,
    TypeOrmModule.forFeature([FallbackBarrierEntity]),
  ],
  providers: [
    FallbackBarrierRepository,
    DatabaseBarrierService,
    FallbackGateService,
    policy,
    barrierStores,
  ],
  exports: [DatabaseBarrierService, FallbackGateService, RedisDownPolicy, ORDER_BARRIER_STORES],
})
export class FallbackModule {}
