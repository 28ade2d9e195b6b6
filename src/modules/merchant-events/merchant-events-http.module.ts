import { Module } from '@nestjs/common';
import { MerchantEventsController } from './merchant-events.controller.js';
import { MerchantEventsModule } from './merchant-events.module.js';

/** The operator's routes for the merchant's events (list, retry), on the API (ApiModule). */
@Module({
  imports: [MerchantEventsModule],
  controllers: [MerchantEventsController],
})
export class MerchantEventsHttpModule {}
