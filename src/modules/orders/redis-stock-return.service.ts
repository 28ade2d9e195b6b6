import { Injectable, Logger } from '@nestjs/common';
import type { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { RedisDownPolicy } from '../fallback/redis-down.policy.js';
import { PurchaseLedgerStore, RestockCode } from '../sale-store/purchase-ledger.store.js';
import { OrderWriterService } from './order-writer.service.js';

/**
 * A cancelled order's stock back in Redis, after the MySQL commit: idempotent by order number
 * (lua/seckill-restock.lua), so running it again finishes a return a crash cut short.
 */
@Injectable()
export class RedisStockReturnService {
  private readonly logger = new Logger(RedisStockReturnService.name);

  constructor(
    private readonly ledger: PurchaseLedgerStore,
    private readonly writer: OrderWriterService,
    private readonly policy: RedisDownPolicy,
  ) {}

  /**
   * With `strict`, a failed Redis step throws (the timeout consumer then retries); otherwise it
   * is logged for the reconciler.
   */
  async giveBack(order: OrderEntity, strict: boolean): Promise<void> {
    await this.restock(order).catch(async (error: Error) => {
      this.logger.error(
        `redis stock return failed: order=${order.orderNo} goods=${order.goodsId} ${error.message}`,
      );
      // While Redis is down (REDIS_DOWN_MODE=database), the sale is rebuilt from MySQL before
      // Redis sells it again, and the rebuild counts this cancel: marking it is enough, and
      // the payment timeouts of the fallback's orders are not held up behind Redis.
      if (this.policy.goesOnWithoutRedis(error)) {
        await this.writer.markRedisStale(order.goodsId);
        return;
      }
      if (strict) throw error;
    });
  }

  private async restock(order: OrderEntity): Promise<void> {
    const code = await this.ledger.restock(
      order.goodsId,
      order.orderNo,
      order.userId,
      order.quantity,
    );
    if (code === RestockCode.Restocked) {
      this.logger.log(`stock returned to redis: order=${order.orderNo} goods=${order.goodsId}`);
    }
  }
}
