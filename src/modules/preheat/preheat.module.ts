import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { QueueJournalModule } from '../queue-journal/queue-journal.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { PreheatService } from './preheat.service.js';

/**
 * The preheat (MySQL to Redis before a sale, and the rebuild of a sale Redis lost). Its route is
 * PreheatHttpModule's, its jobs PreheatJobsModule's.
 */
@Module({
  imports: [GoodsModule, OrdersModule, SaleStoreModule, MessagingModule, QueueJournalModule],
  providers: [PreheatService],
  exports: [PreheatService],
})
export class PreheatModule {}
