import { Module } from '@nestjs/common';
import { MerchantEventsModule } from '../merchant-events/merchant-events.module.js';
import { MessagingModule } from '../messaging/messaging.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { ReconcileModule } from '../reconcile/reconcile.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { DashboardFeedService } from './dashboard-feed.service.js';
import { DashboardPageService } from './dashboard-page.service.js';
import { DashboardController } from './dashboard.controller.js';
import { DashboardScripts } from './dashboard.scripts.js';
import { DashboardStore } from './dashboard.store.js';
import { RateRecorderService } from './rate-recorder.service.js';
import { SaleBoardService } from './sale-board.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { WaitingRoomModule } from '../waiting-room/waiting-room.module.js';

/**
 * The operator dashboard, on instances that serve the API (ApiModule): the page at /dashboard,
 * its admin feed at /api/v1/admin/events, and the flusher that adds this instance's purchase
 * answers per second to the sale's figures in Redis.
 */
@Module({
  imports: [
    MetricsModule,
    MessagingModule,
    ReconcileModule,
    SaleStoreModule,
    GoodsRepositoryModule,
    WaitingRoomModule,
    PaymentsModule,
    MerchantEventsModule,
  ],
  controllers: [DashboardController],
  providers: [
    SaleBoardService,
    DashboardFeedService,
    RateRecorderService,
    DashboardPageService,
    DashboardStore,
    DashboardScripts,
  ],
})
export class DashboardModule {}
