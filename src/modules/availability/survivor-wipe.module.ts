import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { SurvivorWipeService } from './survivor-wipe.service.js';

/**
 * The one wipe of what survived a Redis restart, shared by the instances that sell
 * (AvailabilityModule's SaleRecoveryService) and those that rebuild (AvailabilityJobsModule's
 * SaleRebuilderService), each of which holds only its own half of the recovery.
 */
@Module({
  imports: [GoodsModule, OrdersModule, SaleStoreModule],
  providers: [SurvivorWipeService],
  exports: [SurvivorWipeService],
})
export class SurvivorWipeModule {}
