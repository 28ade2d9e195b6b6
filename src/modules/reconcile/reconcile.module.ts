import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { PreheatModule } from '../preheat/preheat.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { ReconcileVerdicts } from './reconcile-verdicts.js';
import { ReconcileChecks } from './reconcile-checks.service.js';
import { ReconcileRepair } from './reconcile-repair.service.js';
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
  providers: [ReconcileService, ReconcileChecks, ReconcileRepair, ReconcileVerdicts],
  exports: [ReconcileService, ReconcileChecks, ReconcileRepair],
})
export class ReconcileModule {}
