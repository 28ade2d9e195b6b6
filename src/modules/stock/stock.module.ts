import { Module } from '@nestjs/common';
import { PurchaseLockService } from './purchase-lock.service.js';
import { StockService } from './stock.service.js';

@Module({
  providers: [StockService, PurchaseLockService],
  exports: [StockService, PurchaseLockService],
})
export class StockModule {}
