import { Module } from '@nestjs/common';
import { ReconcileCron } from './reconcile.cron.js';
import { ReconcileModule } from './reconcile.module.js';

/** The scheduled reconcile of every open sale (ReconcileCron), on the working instances (WorkerModule). */
@Module({
  imports: [ReconcileModule],
  providers: [ReconcileCron],
})
export class ReconcileJobsModule {}
