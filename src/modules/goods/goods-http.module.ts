import { Module } from '@nestjs/common';
import { GoodsController } from './goods.controller.js';
import { GoodsModule } from './goods.module.js';

/** The goods routes (create a sale, view it), on the instances that serve the API (ApiModule). */
@Module({
  imports: [GoodsModule],
  controllers: [GoodsController],
})
export class GoodsHttpModule {}
