import { Module } from '@nestjs/common';
import { OrderExpiryCron } from './order-expiry.cron.js';
import { OrdersModule } from './orders.module.js';

/** The overdue-order expiry and the voided-request prune (OrderExpiryCron), on the working instances (WorkerModule). */
@Module({
  imports: [OrdersModule],
  providers: [OrderExpiryCron],
})
export class OrdersJobsModule {}
