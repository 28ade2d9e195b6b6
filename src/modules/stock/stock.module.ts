import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { SaleStateLock } from './sale-state-lock.js';
import { SoldOutMemo } from './sold-out-memo.js';
import { StockService } from './stock.service.js';

@Module({
  // The goods' bucket count (stock_shards) is read from its row, once per goods.
  imports: [TypeOrmModule.forFeature([GoodsEntity])],
  providers: [StockService, SoldOutMemo, SaleStateLock],
  exports: [StockService, SoldOutMemo, SaleStateLock],
})
export class StockModule {}
