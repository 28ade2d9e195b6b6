import { Module } from '@nestjs/common';
import { MessagingModule } from '../messaging/messaging.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { OrderExpiryCron } from './order-expiry.cron.js';
import { OrdersModule } from './orders.module.js';
import { TimeoutConsumer } from './timeout.consumer.js';

/**
 * The orders' jobs, on the working instances (WorkerModule): the payment timeouts as they come
 * out of the delay queue (TimeoutConsumer), and the overdue-order expiry behind them with the
 * voided-request prune (OrderExpiryCron).
 */
@Module({
  imports: [MetricsModule, MessagingModule, OrdersModule],
  providers: [OrderExpiryCron, TimeoutConsumer],
})
export class OrdersJobsModule {}
