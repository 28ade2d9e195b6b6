import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { PreheatService } from './preheat.service.js';
import { SurvivorWipe } from './survivor-wipe.service.js';

/**
 * PreheatController is served by ApiModule; PreheatCron and SaleRebuilder run in WorkerModule
 * (src/roles); SaleRecovery guards the purchase path in SeckillModule.
 */
@Module({
  imports: [GoodsModule, OrdersModule, SaleStoreModule, MessagingModule],
  providers: [PreheatService, SurvivorWipe],
  exports: [PreheatService, SurvivorWipe],
})
export class PreheatModule {}
