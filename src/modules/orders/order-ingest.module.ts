import { Module } from '@nestjs/common';
import { FallbackModule } from '../availability/fallback/fallback.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrderPublisher } from '../messaging/order-publisher.service.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { IngestLedger } from './ingest-ledger.service.js';
import { OrderIngest, PAYMENT_TIMEOUTS } from './order-ingest.service.js';
import { OrdersModule } from './orders.module.js';

/**
 * The writing of delivered purchases into MySQL (OrderIngest), for the order consumers
 * (ConsumersModule); its payment-timeout port is bound here to the publisher.
 */
@Module({
  imports: [OrdersModule, MessagingModule, SaleStoreModule, FallbackModule],
  providers: [
    { provide: PAYMENT_TIMEOUTS, useExisting: OrderPublisher },
    IngestLedger,
    OrderIngest,
  ],
  exports: [OrderIngest],
})
export class OrderIngestModule {}
