import { Module } from '@nestjs/common';
import { WaitingRoomController } from './waiting-room.controller.js';
import { WaitingRoomModule } from './waiting-room.module.js';

/** The waiting room's routes (join, standing), on the instances that serve the API (ApiModule). */
@Module({
  imports: [WaitingRoomModule],
  controllers: [WaitingRoomController],
})
export class WaitingRoomHttpModule {}
