import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { StockModule } from '../stock/stock.module.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersService } from './orders.service.js';
import { VoidedRequests } from './voided-requests.service.js';

/**
 * OrdersController is served by ApiModule and OrderExpiryCron run by WorkerModule (src/roles),
 * each on the instances of its role.
 */
@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity]), StockModule],
  providers: [OrdersService, OrderWriter, OrderLifecycleService, VoidedRequests],
  exports: [OrdersService, OrderWriter, OrderLifecycleService, VoidedRequests],
})
export class OrdersModule {}
