import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { VoidedRequestEntity } from '../../infra/database/entities/voided-request.entity.js';
import { TransactionsService } from '../../infra/database/transactions.service.js';
import { FallbackModule } from '../fallback/fallback.module.js';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { OrderPaymentsService } from './order-payments.service.js';
import { OrderRetakeService } from './order-retake.service.js';
import { OrderTransitionsService } from './order-transitions.service.js';
import { RedisStockReturnService } from './redis-stock-return.service.js';
import { OrderRepositoryModule } from './order-repository.module.js';
import { OrderWriterService } from './order-writer.service.js';
import { OrdersService } from './orders.service.js';
import { VoidedRequestRepository } from './voided-request.repository.js';
import { VoidedRequestsService } from './voided-requests.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * Orders in MySQL: reading, writing, pay, cancel, expire, the provider's payment events. Its routes are OrdersHttpModule's, its
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
    TransactionsService,
    VoidedRequestRepository,
    OrdersService,
    OrderWriterService,
    OrderLifecycleService,
    OrderPaymentsService,
    OrderRetakeService,
    OrderTransitionsService,
    RedisStockReturnService,
    VoidedRequestsService,
  ],
  exports: [
    OrdersService,
    OrderWriterService,
    OrderLifecycleService,
    OrderPaymentsService,
    VoidedRequestsService,
  ],
})
export class OrdersModule {}
