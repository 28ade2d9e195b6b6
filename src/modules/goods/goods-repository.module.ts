import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsRepository } from './goods.repository.js';

/**
 * The goods table alone, apart from GoodsModule: SaleStoreModule reads a goods' bucket count
 * from its row and GoodsModule imports SaleStoreModule, and orders, fallback and dashboard need
 * the row without the goods' routes and page cache.
 */
@Module({
  imports: [TypeOrmModule.forFeature([GoodsEntity])],
  providers: [GoodsRepository],
  exports: [GoodsRepository],
})
export class GoodsRepositoryModule {}
