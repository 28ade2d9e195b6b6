import { Module } from '@nestjs/common';
import { StockModule } from '../stock/stock.module.js';
import { OrderBarrier } from './order-barrier.service.js';
import { OrderPublisher } from './order-publisher.service.js';
import { OutboxSweeper } from './outbox-sweeper.service.js';

/**
 * Publishing, which every role does: purchases (api), payment timeouts and the outbox sweep
 * (worker). The consumers are in ConsumersModule, only on the instances that consume.
 */
@Module({
  imports: [StockModule],
  providers: [OrderPublisher, OutboxSweeper, OrderBarrier],
  exports: [OrderPublisher, OutboxSweeper, OrderBarrier],
})
export class MessagingModule {}
