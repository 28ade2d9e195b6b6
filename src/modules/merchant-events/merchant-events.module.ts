import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module.js';
import { MerchantDeliveryService } from './merchant-delivery.service.js';
import { MerchantEventRepository } from './merchant-event.repository.js';

/**
 * The merchant's order events, once written (OrderRepositoryModule's MerchantOutboxRepository):
 * their delivery and the operator's view of them. The admin routes come with MerchantEventsHttpModule
 * on the API; the delivery with MerchantEventsJobsModule on the workers.
 */
@Module({
  imports: [MetricsModule],
  providers: [MerchantEventRepository, MerchantDeliveryService],
  exports: [MerchantEventRepository, MerchantDeliveryService],
})
export class MerchantEventsModule {}
