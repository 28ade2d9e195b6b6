import { Module } from '@nestjs/common';
import { PreheatCron } from './preheat.cron.js';
import { PreheatModule } from './preheat.module.js';

/** The scheduled preheat and eviction (PreheatCron), on the working instances (WorkerModule). */
@Module({
  imports: [PreheatModule],
  providers: [PreheatCron],
})
export class PreheatJobsModule {}
