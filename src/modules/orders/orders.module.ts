import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity])],
  controllers: [OrdersController],
  providers: [OrdersService, OrderWriter],
  exports: [OrdersService, OrderWriter],
})
export class OrdersModule {}
