import { Module } from '@nestjs/common';
import { FallbackModule } from '../fallback/fallback.module.js';
import { OrderIngest, PAYMENT_TIMEOUTS } from '../orders/order-ingest.service.js';
import { OrdersModule } from '../orders/orders.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { MessagingModule } from './messaging.module.js';
import { OrderPublisher } from './order-publisher.service.js';
import { OrderConsumer } from './order-consumer.service.js';
import { TimeoutConsumer } from './timeout-consumer.service.js';

/**
 * The order and timeout consumers, on the instances that consume (WorkerModule). OrderIngest
 * (orders) is provided here, where its payment-timeout port can be bound to the publisher: the
 * orders module never imports messaging, so the module graph stays acyclic.
 */
@Module({
  imports: [MessagingModule, OrdersModule, SaleStoreModule, FallbackModule],
  providers: [
    { provide: PAYMENT_TIMEOUTS, useExisting: OrderPublisher },
    OrderIngest,
    OrderConsumer,
    TimeoutConsumer,
  ],
})
export class ConsumersModule {}
