import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { VoidedRequestEntity } from '../../infra/database/entities/voided-request.entity.js';
import { Transactions } from '../../infra/database/transactions.js';
import { FallbackModule } from '../availability/fallback/fallback.module.js';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { OrderTransitions } from './order-transitions.service.js';
import { RedisStockReturn } from './redis-stock-return.service.js';
import { OrderRepositoryModule } from './order-repository.module.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersService } from './orders.service.js';
import { VoidedRequestRepository } from './voided-request.repository.js';
import { VoidedRequests } from './voided-requests.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * Orders in MySQL: reading, writing, pay, cancel, expire. Its routes are OrdersHttpModule's, its
 * job OrdersJobsModule's, and the writing of delivered purchases OrderIngestModule's.
 */
@Module({
  imports: [
    MetricsModule,
    OrderRepositoryModule,
    GoodsRepositoryModule,
    TypeOrmModule.forFeature([VoidedRequestEntity]),
    SaleStoreModule,
    FallbackModule,
  ],
  providers: [
    Transactions,
    VoidedRequestRepository,
    OrdersService,
    OrderWriter,
    OrderLifecycleService,
    OrderTransitions,
    RedisStockReturn,
    VoidedRequests,
  ],
  exports: [OrdersService, OrderWriter, OrderLifecycleService, VoidedRequests],
})
export class OrdersModule {}
