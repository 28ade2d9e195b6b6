import { Module } from '@nestjs/common';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { GoodsRepositoryModule } from './goods-repository.module.js';
import { GoodsService } from './goods.service.js';

/** GoodsController is served by ApiModule (src/roles), on the instances that serve the API. */
@Module({
  imports: [GoodsRepositoryModule, SaleStoreModule],
  providers: [GoodsService],
  exports: [GoodsService],
})
export class GoodsModule {}
