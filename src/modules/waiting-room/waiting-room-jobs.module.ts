import { Module } from '@nestjs/common';
import { WaitingRoomCron } from './waiting-room.cron.js';
import { WaitingRoomModule } from './waiting-room.module.js';

/** The admission of every open queue (WaitingRoomCron), on the working instances (WorkerModule). */
@Module({
  imports: [WaitingRoomModule],
  providers: [WaitingRoomCron],
})
export class WaitingRoomJobsModule {}
