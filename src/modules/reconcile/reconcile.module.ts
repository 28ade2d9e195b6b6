import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { PreheatModule } from '../preheat/preheat.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { ReconcileVerdictsStore } from './reconcile-verdicts.store.js';
import { ReconcileChecksService } from './reconcile-checks.service.js';
import { ReconcileRepairService } from './reconcile-repair.service.js';
import { ReconcileService } from './reconcile.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/** The reconcile of Redis against MySQL and the repair; its routes and job are in ReconcileHttpModule and ReconcileJobsModule. */
@Module({
  imports: [
    MetricsModule,
    GoodsModule,
    OrdersModule,
    SaleStoreModule,
    PreheatModule,
    MessagingModule,
  ],
  providers: [
    ReconcileService,
    ReconcileChecksService,
    ReconcileRepairService,
    ReconcileVerdictsStore,
  ],
  exports: [ReconcileService, ReconcileChecksService, ReconcileRepairService],
})
export class ReconcileModule {}
