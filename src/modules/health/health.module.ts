import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { StockModule } from '../stock/stock.module.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), StockModule],
  controllers: [HealthController],
})
export class HealthModule {}
