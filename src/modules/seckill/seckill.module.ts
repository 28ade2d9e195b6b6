import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { AvailabilityModule } from '../availability/availability.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { ChallengeModule } from './challenge.module.js';
import { IdempotencyScripts } from './idempotency.scripts.js';
import { IdempotencyService } from './idempotency.service.js';
import { PurchaseTokenService } from './purchase-token.service.js';
import { PurchaseTokenStore } from './purchase-token.store.js';
import { PurchaseRequestService } from './purchase-request.service.js';
import { PurchaseResultService } from './purchase-result.service.js';
import { PurchaseSettlementService } from './purchase-settlement.service.js';
import { PurchaseLocksService } from './purchase-locks.service.js';
import { PurchaseService } from './purchase.service.js';
import { RedisPurchaseService } from './redis-purchase.service.js';
import { ResultStreamsService } from './result-streams.service.js';
import { SeckillController } from './seckill.controller.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { WaitingRoomModule } from '../waiting-room/waiting-room.module.js';

/**
 * The purchase path, served by the instances that serve the API (ApiModule). Which store
 * decides each purchase comes from AvailabilityModule (the restart recovery and the outage
 * policy).
 */
@Module({
  imports: [
    MetricsModule,
    SaleStoreModule,
    MessagingModule,
    GoodsModule,
    OrdersModule,
    AvailabilityModule,
    ChallengeModule,
    WaitingRoomModule,
  ],
  controllers: [SeckillController],
  providers: [
    PurchaseService,
    RedisPurchaseService,
    PurchaseLocksService,
    PurchaseSettlementService,
    PurchaseRequestService,
    PurchaseResultService,
    PurchaseTokenService,
    PurchaseTokenStore,
    IdempotencyService,
    IdempotencyScripts,
    ResultStreamsService,
  ],
})
export class SeckillModule {}
