import { Module } from '@nestjs/common';
import { PreheatModule } from '../preheat/preheat.module.js';
import { FallbackJobsModule } from './fallback-jobs.module.js';
import { SurvivorWipeModule } from './survivor-wipe.module.js';
import { SaleRebuilderService } from './sale-rebuilder.service.js';

/**
 * The availability's jobs, on the working instances (WorkerModule): the rebuild of every open
 * sale after a Redis restart (SaleRebuilderService) and the return to Redis of the sales MySQL sold
 * while it was down (FallbackJobsModule's FallbackReturnService).
 */
@Module({
  imports: [SurvivorWipeModule, PreheatModule, FallbackJobsModule],
  providers: [SaleRebuilderService],
})
export class AvailabilityJobsModule {}
