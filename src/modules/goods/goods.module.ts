import { Module } from '@nestjs/common';
import { GoodsRepositoryModule } from './goods-repository.module.js';
import { GoodsService } from './goods.service.js';

/**
 * The goods table and its rows in memory. Its routes (GoodsController, with the live stock) are
 * SaleViewModule's, served by ApiModule (src/roles).
 */
@Module({
  imports: [GoodsRepositoryModule],
  providers: [GoodsService],
  exports: [GoodsService],
})
export class GoodsModule {}
