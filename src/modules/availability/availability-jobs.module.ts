import { Module } from '@nestjs/common';
import { PreheatModule } from '../preheat/preheat.module.js';
import { SurvivorWipeModule } from './survivor-wipe.module.js';
import { SaleRebuilder } from './sale-rebuilder.service.js';

/** The rebuild of every open sale after a Redis restart (SaleRebuilder), on the working instances (WorkerModule). */
@Module({
  imports: [SurvivorWipeModule, PreheatModule],
  providers: [SaleRebuilder],
})
export class AvailabilityJobsModule {}
