import { Module } from '@nestjs/common';
import { MessagingModule } from '../messaging/messaging.module.js';
import { StockModule } from '../stock/stock.module.js';
import { DatabaseBarrier } from './database-barrier.service.js';
import { DatabasePurchase } from './database-purchase.service.js';
import { FallbackGate } from './fallback-gate.service.js';

/**
 * The Redis-down fallback (REDIS_DOWN_MODE=database): the purchase decided by MySQL alone and
 * this instance's switch between the stores (SeckillModule), and the barrier in MySQL that the
 * order consumers drain (ConsumersModule). FallbackReturn, which brings the sales MySQL sold
 * back to Redis, runs in WorkerModule (src/roles).
 */
@Module({
  imports: [MessagingModule, StockModule],
  providers: [DatabaseBarrier, FallbackGate, DatabasePurchase],
  exports: [DatabaseBarrier, FallbackGate, DatabasePurchase],
})
export class FallbackModule {}
