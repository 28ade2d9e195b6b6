import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { StockModule } from '../stock/stock.module.js';
import { OrderExpiryCron } from './order-expiry.cron.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity]), StockModule],
  controllers: [OrdersController],
  providers: [OrdersService, OrderWriter, OrderLifecycleService, OrderExpiryCron],
  exports: [OrdersService, OrderWriter, OrderLifecycleService],
})
export class OrdersModule {}
