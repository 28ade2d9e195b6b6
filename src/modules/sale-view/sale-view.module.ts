import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { QueueJournalModule } from '../queue-journal/queue-journal.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { GoodsController } from './goods.controller.js';
import { SaleViewService } from './sale-view.service.js';

/**
 * The goods routes (create a sale, view it with its live stock), on the instances that serve the
 * API (ApiModule).
 */
@Module({
  imports: [GoodsModule, SaleStoreModule, QueueJournalModule],
  controllers: [GoodsController],
  providers: [SaleViewService],
})
export class SaleViewModule {}
