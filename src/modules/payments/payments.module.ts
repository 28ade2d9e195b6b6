import { Module } from '@nestjs/common';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { PaymentEventRepository } from './payment-event.repository.js';
import { PaymentsController } from './payments.controller.js';
import { PaymentsService } from './payments.service.js';

/**
 * The payment provider's webhook, on the instances that serve the API (ApiModule): its signature,
 * its events by id, and what they do to orders (OrderPaymentsService).
 */
@Module({
  imports: [MetricsModule, GoodsRepositoryModule, OrdersModule],
  controllers: [PaymentsController],
  providers: [PaymentsService, PaymentEventRepository],
  exports: [PaymentEventRepository],
})
export class PaymentsModule {}
