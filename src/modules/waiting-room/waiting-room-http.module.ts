import { Module } from '@nestjs/common';
import { DrawEntryController } from './draw-entry.controller.js';
import { FairnessController } from './fairness.controller.js';
import { WaitingRoomAdminController } from './waiting-room-admin.controller.js';
import { WaitingRoomController } from './waiting-room.controller.js';
import { WaitingRoomModule } from './waiting-room.module.js';

/**
 * The waiting room's routes (join, standing, stream; a draw sale's entry, standing, stream; the
 * operator's pause and pace; the draw's fairness answer and export), on the instances that serve
 * the API (ApiModule).
 */
@Module({
  imports: [WaitingRoomModule],
  controllers: [
    WaitingRoomController,
    DrawEntryController,
    WaitingRoomAdminController,
    FairnessController,
  ],
})
export class WaitingRoomHttpModule {}
