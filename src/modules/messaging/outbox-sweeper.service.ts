import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { StockService } from '../stock/stock.service.js';
import { parseOrderMessage } from './order-message.js';
import { OrderPublisher } from './order-publisher.service.js';

const SWEEP_BATCH = 500;

/**
 * Republishes accepted purchases whose publish was never confirmed: the process died between
 * the Lua step and the broker's confirm. Repeats are harmless (the consumer dedups on
 * request_id), so the sweeper errs on the side of publishing.
 */
@Injectable()
export class OutboxSweeper {
  private readonly logger = new Logger(OutboxSweeper.name);

  constructor(
    private readonly stock: StockService,
    private readonly publisher: OrderPublisher,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /**
   * One pass over every preheated sale; returns how many messages it republished. `now` is on
   * Redis's clock (the outbox is stamped by the Lua scripts with Redis `TIME`; on a cluster,
   * read per sale from the master that holds it): this host's clock, skewed by more than
   * OUTBOX_STALE_MS, would republish live purchases at peak.
   */
  async sweep(at?: number): Promise<number> {
    if (!this.publisher.isReady()) return 0;
    let republished = 0;
    for (const goodsId of await this.stock.preheatedSales()) {
      const now = at ?? (await this.stock.serverTimeMs(goodsId));
      await this.stock.forgetOldVoided(goodsId, now);
      const stale = await this.stock.staleOutbox(
        goodsId,
        now - this.config.outboxStaleMs,
        SWEEP_BATCH,
      );
      const settled: string[] = [];
      await Promise.all(
        stale.map(async ({ requestId, message }) => {
          // No message: the purchase was completed or released meanwhile.
          const order = message === null ? null : parseOrderMessage(message);
          if (order === null || typeof order === 'string') {
            settled.push(requestId);
            return;
          }
          if (await this.publisher.publish(order)) {
            settled.push(requestId);
            republished++;
            this.logger.log(`republished: request=${requestId} goods=${goodsId}`);
          }
        }),
      );
      await this.stock.markPublished(goodsId, settled);
    }
    return republished;
  }
}
