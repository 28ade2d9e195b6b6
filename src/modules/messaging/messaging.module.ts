import { Module } from '@nestjs/common';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { OrderBarrier } from './order-barrier.service.js';
import { OrderPublisher } from './order-publisher.service.js';
import { OutboxSweeper } from './outbox-sweeper.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * Publishing, which every role does: purchases (api), payment timeouts and the outbox sweep
 * (worker). The consumers are in ConsumersModule, only on the instances that consume.
 */
@Module({
  imports: [MetricsModule, SaleStoreModule],
  providers: [OrderPublisher, OutboxSweeper, OrderBarrier],
  exports: [OrderPublisher, OutboxSweeper, OrderBarrier],
})
export class MessagingModule {}
