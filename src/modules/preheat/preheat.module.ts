import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { StockModule } from '../stock/stock.module.js';
import { PreheatController } from './preheat.controller.js';
import { PreheatCron } from './preheat.cron.js';
import { PreheatService } from './preheat.service.js';
import { SaleRecovery } from './sale-recovery.service.js';

@Module({
  imports: [GoodsModule, OrdersModule, StockModule, MessagingModule],
  controllers: [PreheatController],
  providers: [PreheatService, PreheatCron, SaleRecovery],
  exports: [PreheatService, SaleRecovery],
})
export class PreheatModule {}
