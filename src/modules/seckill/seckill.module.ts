import { Module } from '@nestjs/common';
import { FallbackModule } from '../fallback/fallback.module.js';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { PreheatModule } from '../preheat/preheat.module.js';
import { SaleRecovery } from '../preheat/sale-recovery.service.js';
import { StockModule } from '../stock/stock.module.js';
import { ChallengeService } from './challenge.service.js';
import { IdempotencyService } from './idempotency.service.js';
import { PurchaseTokenService } from './purchase-token.service.js';
import { PurchaseRequestService } from './purchase-request.service.js';
import { PurchaseResultService } from './purchase-result.service.js';
import { PurchaseService } from './purchase.service.js';
import { ResultEvents } from './result-events.js';
import { ResultStreams } from './result-stream.service.js';
import { SeckillController } from './seckill.controller.js';

/**
 * The purchase path, served by the instances that serve the API (ApiModule). SaleRecovery is
 * provided here, with what it guards: every instance that sells closes its own purchases while
 * Redis is rebuilt.
 */
@Module({
  imports: [StockModule, MessagingModule, GoodsModule, OrdersModule, PreheatModule, FallbackModule],
  controllers: [SeckillController],
  providers: [
    PurchaseService,
    PurchaseRequestService,
    PurchaseResultService,
    PurchaseTokenService,
    ChallengeService,
    IdempotencyService,
    SaleRecovery,
    ResultEvents,
    ResultStreams,
  ],
})
export class SeckillModule {}
