import { Module } from '@nestjs/common';
import { BlocklistController } from '../modules/blocklist/blocklist.controller.js';
import { BlocklistModule } from '../modules/blocklist/blocklist.module.js';
import { DashboardModule } from '../modules/dashboard/dashboard.module.js';
import { GoodsController } from '../modules/goods/goods.controller.js';
import { GoodsModule } from '../modules/goods/goods.module.js';
import { OrdersController } from '../modules/orders/orders.controller.js';
import { OrdersModule } from '../modules/orders/orders.module.js';
import { PreheatController } from '../modules/preheat/preheat.controller.js';
import { PreheatModule } from '../modules/preheat/preheat.module.js';
import { ReconcileController } from '../modules/reconcile/reconcile.controller.js';
import { ReconcileModule } from '../modules/reconcile/reconcile.module.js';
import { SeckillModule } from '../modules/seckill/seckill.module.js';

/**
 * What an instance serving the API (APP_ROLE `api` or `all`) adds: the routes under /api/v1, the
 * purchase path with its per-instance guards, publishing, and the operator dashboard. It
 * consumes nothing.
 */
@Module({
  imports: [
    BlocklistModule,
    GoodsModule,
    OrdersModule,
    PreheatModule,
    ReconcileModule,
    SeckillModule,
    DashboardModule,
  ],
  controllers: [
    BlocklistController,
    GoodsController,
    OrdersController,
    PreheatController,
    ReconcileController,
  ],
})
export class ApiModule {}
