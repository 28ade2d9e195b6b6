import { Module } from '@nestjs/common';
import { GoodsRepositoryModule } from '../../goods/goods-repository.module.js';
import { PreheatModule } from '../../preheat/preheat.module.js';
import { SaleStoreModule } from '../../sale-store/sale-store.module.js';
import { FallbackReturn } from './fallback-return.service.js';
import { FallbackModule } from './fallback.module.js';

/** The return to Redis of the sales MySQL sold while Redis was down (FallbackReturn), on the working instances (WorkerModule). */
@Module({
  imports: [FallbackModule, GoodsRepositoryModule, PreheatModule, SaleStoreModule],
  providers: [FallbackReturn],
})
export class FallbackJobsModule {}
