import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { PreheatModule } from '../preheat/preheat.module.js';
import { StockModule } from '../stock/stock.module.js';
import { ReconcileController } from './reconcile.controller.js';
import { ReconcileCron } from './reconcile.cron.js';
import { ReconcileService } from './reconcile.service.js';

@Module({
  imports: [GoodsModule, OrdersModule, StockModule, PreheatModule, MessagingModule],
  controllers: [ReconcileController],
  providers: [ReconcileService, ReconcileCron],
})
export class ReconcileModule {}
