import { Module } from '@nestjs/common';
import { FallbackModule } from '../fallback/fallback.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { IngestLedgerService } from './ingest-ledger.service.js';
import { OrderIngestService, PAYMENT_TIMEOUTS } from './order-ingest.service.js';
import { OrdersModule } from '../orders/orders.module.js';

/**
 * The writing of delivered purchases into MySQL (OrderIngestService), for the order consumers
 * (ConsumersModule); its payment-timeout port is bound here to the publisher.
 */
@Module({
  imports: [OrdersModule, MessagingModule, SaleStoreModule, FallbackModule],
  providers: [
    { provide: PAYMENT_TIMEOUTS, useExisting: OrderPublisher },
    IngestLedgerService,
    OrderIngestService,
  ],
  exports: [OrderIngestService],
})
export class OrderIngestModule {}
