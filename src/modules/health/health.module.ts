import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { MessagingModule } from '../messaging/messaging.module.js';
import { StockModule } from '../stock/stock.module.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), StockModule, MessagingModule],
  controllers: [HealthController],
})
export class HealthModule {}
