import { Module } from '@nestjs/common';
import { BuyerPageService } from './buyer-page.service.js';
import { BuyerPageController } from './buyer-page.controller.js';

/**
 * The buyer's page, on instances that serve the API (ApiModule). It reads nothing itself: the
 * page's script calls the public API like any other client.
 */
@Module({
  controllers: [BuyerPageController],
  providers: [BuyerPageService],
})
export class BuyerPageModule {}
