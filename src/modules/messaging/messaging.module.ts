import { Module } from '@nestjs/common';
import { OrderIngest, PAYMENT_TIMEOUTS } from '../orders/order-ingest.service.js';
import { OrdersModule } from '../orders/orders.module.js';
import { StockModule } from '../stock/stock.module.js';
import { MessagingCron } from './messaging.cron.js';
import { OrderConsumer } from './order-consumer.service.js';
import { OrderPublisher } from './order-publisher.service.js';
import { OutboxSweeper } from './outbox-sweeper.service.js';
import { TimeoutConsumer } from './timeout-consumer.service.js';

/**
 * OrderIngest (orders) is provided here, where its payment-timeout port can be bound to the
 * publisher: the orders module never imports messaging, so the module graph stays acyclic.
 */
@Module({
  imports: [OrdersModule, StockModule],
  providers: [
    OrderPublisher,
    { provide: PAYMENT_TIMEOUTS, useExisting: OrderPublisher },
    OrderIngest,
    OrderConsumer,
    TimeoutConsumer,
    OutboxSweeper,
    MessagingCron,
  ],
  exports: [OrderPublisher, OutboxSweeper],
})
export class MessagingModule {}
