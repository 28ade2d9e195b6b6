import { Module } from '@nestjs/common';
import { BuyerPageModule } from '../modules/buyer-page/buyer-page.module.js';
import { BlocklistHttpModule } from '../modules/blocklist/blocklist-http.module.js';
import { DashboardModule } from '../modules/dashboard/dashboard.module.js';
import { SaleViewModule } from '../modules/sale-view/sale-view.module.js';
import { MerchantEventsHttpModule } from '../modules/merchant-events/merchant-events-http.module.js';
import { OrdersHttpModule } from '../modules/orders/orders-http.module.js';
import { PaymentsModule } from '../modules/payments/payments.module.js';
import { PreheatHttpModule } from '../modules/preheat/preheat-http.module.js';
import { ReconcileHttpModule } from '../modules/reconcile/reconcile-http.module.js';
import { SeckillModule } from '../modules/seckill/seckill.module.js';
import { WaitingRoomHttpModule } from '../modules/waiting-room/waiting-room-http.module.js';

/**
 * What an instance serving the API (APP_ROLE `api` or `all`) adds: the routes under /api/v1, the
 * purchase path with its per-instance guards, publishing, the operator dashboard and the buyer's page. It
 * consumes nothing. Each feature brings its own routes (its `…HttpModule`, or the feature module
 * itself where it has nothing but routes here).
 */
@Module({
  imports: [
    BlocklistHttpModule,
    SaleViewModule,
    OrdersHttpModule,
    PaymentsModule,
    MerchantEventsHttpModule,
    PreheatHttpModule,
    ReconcileHttpModule,
    SeckillModule,
    WaitingRoomHttpModule,
    DashboardModule,
    BuyerPageModule,
  ],
})
export class ApiModule {}
