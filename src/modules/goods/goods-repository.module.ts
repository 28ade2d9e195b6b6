import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsRepository } from './goods.repository.js';

/**
 * The goods table alone, apart from GoodsModule's rows in memory: for those that need the row as
 * MySQL holds it now (SaleStoreModule reads a goods' bucket count from it; orders, fallback and
 * dashboard).
 */
@Module({
  imports: [TypeOrmModule.forFeature([GoodsEntity])],
  providers: [GoodsRepository],
  exports: [GoodsRepository],
})
export class GoodsRepositoryModule {}
