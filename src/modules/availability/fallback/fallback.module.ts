import { Module, type FactoryProvider } from '@nestjs/common';
import {
  availabilityConfig,
  type AvailabilityConfig,
} from '../../../config/availability.config.js';
import { ORDER_BARRIER_STORES, type BarrierStore } from '../../messaging/barrier-store.js';
import { MessagingModule } from '../../messaging/messaging.module.js';
import { OrderBarrier } from '../../messaging/order-barrier.service.js';
import { SaleStoreModule } from '../../sale-store/sale-store.module.js';
import { DatabaseBarrier } from './database-barrier.service.js';
import { DatabasePurchase } from './database-purchase.service.js';
import { FallbackGate } from './fallback-gate.service.js';
import { ClosedWhileRedisDown, RedisDownPolicy, SellThroughDatabase } from './redis-down-policy.js';
import { MetricsModule } from '../../metrics/metrics.module.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FallbackBarrierEntity } from '../../../infra/database/entities/fallback-barrier.entity.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { GoodsRepositoryModule } from '../../goods/goods-repository.module.js';
import { OrderRepositoryModule } from '../../orders/order-repository.module.js';
import { FallbackBarrierRepository } from './fallback-barrier.repository.js';

/** The one reading of REDIS_DOWN_MODE: every Redis-down question is answered by this policy. */
const policy: FactoryProvider<RedisDownPolicy> = {
  provide: RedisDownPolicy,
  inject: [availabilityConfig.KEY, FallbackGate],
  useFactory: (availability: AvailabilityConfig, gate: FallbackGate) =>
    availability.redisDownMode === 'database'
      ? new SellThroughDatabase(gate)
      : new ClosedWhileRedisDown(),
};

const barrierStores: FactoryProvider<BarrierStore[]> = {
  provide: ORDER_BARRIER_STORES,
  inject: [RedisDownPolicy, OrderBarrier, DatabaseBarrier],
  useFactory: (chosen: RedisDownPolicy, redis: OrderBarrier, database: DatabaseBarrier) =>
    chosen.barrierStores(redis, database),
};

/**
 * What the service does while Redis is down (REDIS_DOWN_MODE, read here only): the policy
 * (closed, or sell through MySQL), the purchase decided by MySQL alone and this instance's
 * switch between the stores (used through AvailabilityModule), and the barrier stores the
 * order consumers drain (ConsumersModule). FallbackReturn, which brings the sales MySQL sold
 * back to Redis, runs in WorkerModule (src/roles).
 */
@Module({
  imports: [
    MetricsModule,
    MessagingModule,
    SaleStoreModule,
    GoodsRepositoryModule,
    OrderRepositoryModule,
    TypeOrmModule.forFeature([FallbackBarrierEntity]),
  ],
  providers: [
    Transactions,
    FallbackBarrierRepository,
    DatabaseBarrier,
    FallbackGate,
    DatabasePurchase,
    policy,
    barrierStores,
  ],
  exports: [DatabaseBarrier, FallbackGate, DatabasePurchase, RedisDownPolicy, ORDER_BARRIER_STORES],
})
export class FallbackModule {}
