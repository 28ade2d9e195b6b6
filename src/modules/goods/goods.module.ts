import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { GoodsService } from './goods.service.js';

/** GoodsController is served by ApiModule (src/roles), on the instances that serve the API. */
@Module({
  imports: [TypeOrmModule.forFeature([GoodsEntity]), SaleStoreModule],
  providers: [GoodsService],
  exports: [GoodsService],
})
export class GoodsModule {}
