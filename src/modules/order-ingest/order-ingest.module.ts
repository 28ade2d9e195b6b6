import { Module } from '@nestjs/common';
import { FallbackModule } from '../fallback/fallback.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { IngestLedgerService } from './ingest-ledger.service.js';
import { OrderIngestService, PAYMENT_TIMEOUTS } from './order-ingest.service.js';
import { OrdersModule } from '../orders/orders.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { OrderConsumer } from './order.consumer.js';

/**
 * The order write path, on the instances that consume (WorkerModule): the order consumer
 * (OrderConsumer) hands the queue's purchases in batches to OrderIngestService, which writes them
 * into MySQL, and drains the barrier stores the Redis-down policy binds (FallbackModule). The
 * payment-timeout port is bound here to the publisher.
 */
@Module({
  imports: [MetricsModule, OrdersModule, MessagingModule, SaleStoreModule, FallbackModule],
  providers: [
    { provide: PAYMENT_TIMEOUTS, useExisting: OrderPublisher },
    IngestLedgerService,
    OrderIngestService,
    OrderConsumer,
  ],
  exports: [OrderIngestService],
})
export class OrderIngestModule {}
