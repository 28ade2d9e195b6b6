import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module.js';
import { LoadMonitorService } from './load-monitor.service.js';

/**
 * The instance's measure of its own load and the decision to shed new purchases
 * (shed-overload.hook.ts, installed by bootstrap.ts); the purchase path reports its confirm waits.
 */
@Module({
  imports: [MetricsModule],
  providers: [LoadMonitorService],
  exports: [LoadMonitorService],
})
export class OverloadModule {}
