import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { StockModule } from '../stock/stock.module.js';
import { GoodsController } from './goods.controller.js';
import { GoodsService } from './goods.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([GoodsEntity]), StockModule],
  controllers: [GoodsController],
  providers: [GoodsService],
  exports: [GoodsService],
})
export class GoodsModule {}
