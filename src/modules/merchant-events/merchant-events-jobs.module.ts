import { Module } from '@nestjs/common';
import { MerchantEventsCron } from './merchant-events.cron.js';
import { MerchantEventsModule } from './merchant-events.module.js';

/** The delivery of the merchant's events, on the working instances (WorkerModule). */
@Module({
  imports: [MerchantEventsModule],
  providers: [MerchantEventsCron],
})
export class MerchantEventsJobsModule {}
