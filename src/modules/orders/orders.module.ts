import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { FallbackModule } from '../fallback/fallback.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersService } from './orders.service.js';
import { VoidedRequests } from './voided-requests.service.js';

/**
 * OrdersController is served by ApiModule and OrderExpiryCron run by WorkerModule (src/roles),
 * each on the instances of its role.
 */
@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity]), SaleStoreModule, FallbackModule],
  providers: [OrdersService, OrderWriter, OrderLifecycleService, VoidedRequests],
  exports: [OrdersService, OrderWriter, OrderLifecycleService, VoidedRequests],
})
export class OrdersModule {}
