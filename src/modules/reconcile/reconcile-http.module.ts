import { Module } from '@nestjs/common';
import { ReconcileController } from './reconcile.controller.js';
import { ReconcileModule } from './reconcile.module.js';

/** The admin reconcile and repair routes, on the instances that serve the API (ApiModule). */
@Module({
  imports: [ReconcileModule],
  controllers: [ReconcileController],
})
export class ReconcileHttpModule {}
