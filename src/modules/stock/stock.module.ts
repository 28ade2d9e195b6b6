import { Module } from '@nestjs/common';
import { SoldOutMemo } from './sold-out-memo.js';
import { StockService } from './stock.service.js';

@Module({
  providers: [StockService, SoldOutMemo],
  exports: [StockService, SoldOutMemo],
})
export class StockModule {}
