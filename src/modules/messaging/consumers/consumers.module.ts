import { Module } from '@nestjs/common';
import { FallbackModule } from '../../fallback/fallback.module.js';
import { OrderIngestModule } from '../../order-ingest/order-ingest.module.js';
import { OrdersModule } from '../../orders/orders.module.js';
import { MessagingModule } from '../messaging.module.js';
import { OrderConsumer } from './order.consumer.js';
import { TimeoutConsumer } from './timeout.consumer.js';
import { MetricsModule } from '../../metrics/metrics.module.js';

/**
 * The order and timeout consumers, on the instances that consume (WorkerModule): the order
 * consumer hands its batches to OrderIngestService and drains the barrier stores the Redis-down policy
 * binds (FallbackModule); the timeout consumer expires unpaid orders (OrdersModule).
 */
@Module({
  imports: [MetricsModule, MessagingModule, OrdersModule, OrderIngestModule, FallbackModule],
  providers: [OrderConsumer, TimeoutConsumer],
})
export class ConsumersModule {}
