import { Module } from '@nestjs/common';
import { PreheatCron } from './preheat.cron.js';
import { PreheatModule } from './preheat.module.js';
import { SaleRebuilder } from './sale-rebuilder.service.js';

/** The scheduled preheat and eviction (PreheatCron) and the rebuild after a Redis restart (SaleRebuilder), on the working instances (WorkerModule). */
@Module({
  imports: [PreheatModule],
  providers: [PreheatCron, SaleRebuilder],
})
export class PreheatJobsModule {}
