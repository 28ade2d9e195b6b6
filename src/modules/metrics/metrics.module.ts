import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller.js';
import { MetricsService } from './metrics.service.js';
import { StoreGaugesService } from './store-gauges.service.js';

/** Prometheus metrics: imported by every module whose services count; one registry per process. */
@Module({
  controllers: [MetricsController],
  providers: [MetricsService, StoreGaugesService],
  exports: [MetricsService],
})
export class MetricsModule {}
