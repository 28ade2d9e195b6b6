import { Module } from '@nestjs/common';
import { OrdersController } from './orders.controller.js';
import { OrdersModule } from './orders.module.js';

/** The buyer's order routes (list, pay, cancel), on the instances that serve the API (ApiModule). */
@Module({
  imports: [OrdersModule],
  controllers: [OrdersController],
})
export class OrdersHttpModule {}
