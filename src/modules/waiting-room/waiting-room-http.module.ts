import { Module } from '@nestjs/common';
import { WaitingRoomAdminController } from './waiting-room-admin.controller.js';
import { WaitingRoomController } from './waiting-room.controller.js';
import { WaitingRoomModule } from './waiting-room.module.js';

/** The waiting room's routes (join, standing, stream; the operator's pause and pace), on the instances that serve the API (ApiModule). */
@Module({
  imports: [WaitingRoomModule],
  controllers: [WaitingRoomController, WaitingRoomAdminController],
})
export class WaitingRoomHttpModule {}
