import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module.js';
import { ChallengeModule } from '../seckill/challenge.module.js';
import { AdmissionPacer } from './admission-pacer.service.js';
import { QueueScripts } from './queue-scripts.js';
import { WaitingRoom } from './waiting-room.service.js';

/**
 * A `queue` sale's waiting room: joining, the standing, and the admission pace. Its routes are
 * WaitingRoomHttpModule's, its job WaitingRoomJobsModule's; the purchase token asks it whether
 * a buyer is admitted (WaitingRoom.requireAdmission).
 */
@Module({
  imports: [GoodsModule, ChallengeModule],
  providers: [QueueScripts, WaitingRoom, AdmissionPacer],
  exports: [WaitingRoom, AdmissionPacer],
})
export class WaitingRoomModule {}
