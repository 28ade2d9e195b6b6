import { Module } from '@nestjs/common';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { RedisBarrierStore } from './redis-barrier.store.js';
import { OrderPublisher } from './order.publisher.js';
import { OutboxSweeperService } from './outbox-sweeper.service.js';
import { BacklogGaugesService } from './backlog-gauges.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * Publishing, which every role does: purchases (api), payment timeouts and the outbox sweep
 * (worker). The consumers belong to the features they feed (OrderIngestModule, OrdersJobsModule),
 * on the instances that consume, and read their queues through QueueConsumer.
 */
@Module({
  imports: [MetricsModule, SaleStoreModule],
  providers: [OrderPublisher, OutboxSweeperService, RedisBarrierStore, BacklogGaugesService],
  exports: [OrderPublisher, OutboxSweeperService, RedisBarrierStore],
})
export class MessagingModule {}
