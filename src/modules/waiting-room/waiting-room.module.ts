import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { OrderRepositoryModule } from '../orders/order-repository.module.js';
import { QueueJournalModule } from '../queue-journal/queue-journal.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { ChallengeModule } from '../challenge/challenge.module.js';
import { DrawEntryService } from './draw-entry.service.js';
import { FairnessService } from './fairness.service.js';
import { QueueGaugesService } from './queue-gauges.service.js';
import { AdmissionPacerService } from './admission-pacer.service.js';
import { QueueControlService } from './queue-control.service.js';
import { QueueScripts } from './queue.scripts.js';
import { QueueStreamsService } from './queue-streams.service.js';
import { ReturnsOutlookService } from './returns-outlook.service.js';
import { RoomDrawService } from './room-draw.service.js';
import { RoomWatcherService } from './room-watcher.service.js';
import { WaitingRoomService } from './waiting-room.service.js';

/**
 * A `queue` sale's waiting room: joining, the standing, its stream, and the admission pace; and
 * a `draw` sale's entries, drawn and given purchase rights by the same room. Its routes are
 * WaitingRoomHttpModule's, its job WaitingRoomJobsModule's; the purchase token asks it whether
 * a buyer is admitted (WaitingRoomService.requireAdmission).
 */
@Module({
  imports: [
    GoodsModule,
    ChallengeModule,
    SaleStoreModule,
    MetricsModule,
    OrderRepositoryModule,
    QueueJournalModule,
  ],
  providers: [
    QueueScripts,
    WaitingRoomService,
    DrawEntryService,
    AdmissionPacerService,
    RoomDrawService,
    QueueStreamsService,
    RoomWatcherService,
    QueueControlService,
    ReturnsOutlookService,
    QueueGaugesService,
    FairnessService,
  ],
  exports: [
    FairnessService,
    WaitingRoomService,
    DrawEntryService,
    AdmissionPacerService,
    QueueStreamsService,
    QueueControlService,
  ],
})
export class WaitingRoomModule {}
