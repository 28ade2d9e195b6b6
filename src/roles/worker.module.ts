import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { FallbackModule } from '../modules/fallback/fallback.module.js';
import { FallbackReturn } from '../modules/fallback/fallback-return.service.js';
import { ConsumersModule } from '../modules/messaging/consumers.module.js';
import { MessagingCron } from '../modules/messaging/messaging.cron.js';
import { MessagingModule } from '../modules/messaging/messaging.module.js';
import { OrderExpiryCron } from '../modules/orders/order-expiry.cron.js';
import { OrdersModule } from '../modules/orders/orders.module.js';
import { PreheatCron } from '../modules/preheat/preheat.cron.js';
import { PreheatModule } from '../modules/preheat/preheat.module.js';
import { SaleRebuilder } from '../modules/preheat/sale-rebuilder.service.js';
import { ReconcileCron } from '../modules/reconcile/reconcile.cron.js';
import { ReconcileModule } from '../modules/reconcile/reconcile.module.js';
import { SaleStoreModule } from '../modules/sale-store/sale-store.module.js';

/**
 * What a working instance (APP_ROLE `worker` or `all`) adds: the order and timeout consumers,
 * and the cluster-wide jobs, each run by one instance at a time (a Redlock per job): preheat,
 * outbox sweep, overdue-order expiry, reconcile, eviction of ended sales, and the rebuild of the
 * sales after a Redis restart, and the return to Redis of the sales MySQL sold while it was down.
 */
@Module({
  imports: [
    ScheduleModule.forRoot(),
    ConsumersModule,
    MessagingModule,
    OrdersModule,
    PreheatModule,
    ReconcileModule,
    FallbackModule,
    SaleStoreModule,
  ],
  providers: [
    MessagingCron,
    OrderExpiryCron,
    PreheatCron,
    ReconcileCron,
    SaleRebuilder,
    FallbackReturn,
  ],
})
export class WorkerModule {}
