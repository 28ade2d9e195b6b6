import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { FallbackModule } from '../fallback/fallback.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersService } from './orders.service.js';
import { VoidedRequests } from './voided-requests.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * Orders in MySQL: reading, writing, pay, cancel, expire. Its routes are OrdersHttpModule's, its
 * job OrdersJobsModule's, and the writing of delivered purchases OrderIngestModule's.
 */
@Module({
  imports: [
    MetricsModule,
    TypeOrmModule.forFeature([OrderEntity]),
    SaleStoreModule,
    FallbackModule,
  ],
  providers: [OrdersService, OrderWriter, OrderLifecycleService, VoidedRequests],
  exports: [OrdersService, OrderWriter, OrderLifecycleService, VoidedRequests],
})
export class OrdersModule {}
