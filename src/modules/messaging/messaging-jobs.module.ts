import { Module } from '@nestjs/common';
import { MessagingCron } from './messaging.cron.js';
import { MessagingModule } from './messaging.module.js';

/** The outbox sweep (MessagingCron), on the working instances (WorkerModule), one at a time by its lock. */
@Module({
  imports: [MessagingModule],
  providers: [MessagingCron],
})
export class MessagingJobsModule {}
