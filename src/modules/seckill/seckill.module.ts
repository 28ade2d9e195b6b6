import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { AvailabilityModule } from '../availability/availability.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { ChallengeModule } from '../challenge/challenge.module.js';
import { FallbackModule } from '../fallback/fallback.module.js';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { OrderRepositoryModule } from '../orders/order-repository.module.js';
import { TransactionsService } from '../../infra/database/transactions.service.js';
import { DatabasePurchaseService } from './database-purchase.service.js';
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
import { OverloadModule } from '../overload/overload.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { WaitingRoomModule } from '../waiting-room/waiting-room.module.js';

/**
 * The purchase path, served by the instances that serve the API (ApiModule). Which store
 * decides each purchase is its ticket's (AvailabilityModule: the restart recovery and the outage
 * policy); the two ways of deciding one, Redis and MySQL alone, are strategies side by side here.
 */
@Module({
  imports: [
    MetricsModule,
    OverloadModule,
    SaleStoreModule,
    MessagingModule,
    GoodsModule,
    OrdersModule,
    AvailabilityModule,
    FallbackModule,
    GoodsRepositoryModule,
    OrderRepositoryModule,
    ChallengeModule,
    WaitingRoomModule,
  ],
  controllers: [SeckillController],
  providers: [
    PurchaseService,
    RedisPurchaseService,
    DatabasePurchaseService,
    TransactionsService,
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
