import { Module } from '@nestjs/common';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { PreheatModule } from '../preheat/preheat.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { FallbackReturnService } from './fallback-return.service.js';
import { FallbackModule } from '../fallback/fallback.module.js';

/** The return to Redis of the sales MySQL sold while Redis was down (FallbackReturnService), on the working instances (WorkerModule). */
@Module({
  imports: [FallbackModule, GoodsRepositoryModule, PreheatModule, SaleStoreModule],
  providers: [FallbackReturnService],
})
export class FallbackJobsModule {}
