import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module.js';
import { StockModule } from '../stock/stock.module.js';
import { MessagingCron } from './messaging.cron.js';
import { OrderConsumer } from './order-consumer.service.js';
import { OrderPublisher } from './order-publisher.service.js';
import { OutboxSweeper } from './outbox-sweeper.service.js';
import { TimeoutConsumer } from './timeout-consumer.service.js';

@Module({
  imports: [OrdersModule, StockModule],
  providers: [OrderPublisher, OrderConsumer, TimeoutConsumer, OutboxSweeper, MessagingCron],
  exports: [OrderPublisher, OutboxSweeper],
})
export class MessagingModule {}
