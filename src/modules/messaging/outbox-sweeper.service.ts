import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';
import { OutboxReaderStore } from '../sale-store/outbox-reader.store.js';
import { StockLoansStore } from '../sale-store/stock-loans.store.js';
import { parseOrderMessage } from './order-message.js';
import { OrderPublisher } from './order.publisher.js';

const SWEEP_BATCH = 500;

/**
 * Republishes accepted purchases whose publish was never confirmed: the process died between
 * the Lua step and the broker's confirm. Repeats are harmless (the consumer dedups on
 * request_id), so the sweeper errs on the side of publishing.
 */
@Injectable()
export class OutboxSweeperService {
  private readonly logger = new Logger(OutboxSweeperService.name);

  constructor(
    private readonly outbox: OutboxReaderStore,
    private readonly loans: StockLoansStore,
    private readonly publisher: OrderPublisher,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
    @InjectConfig(jobsConfig) private readonly jobs: JobsConfig,
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
    for (const goodsId of await this.outbox.sales()) {
      // A purchase lock outlived by its loan: the record step is not coming any more. Its
      // failure (a master of one bucket unreachable) must not hold back the republishing of
      // accepted purchases, of this sale or of any other: the next pass sweeps the loans again.
      try {
        await this.loans.sweep(goodsId, this.seckill.purchaseLockTtlMs, at);
      } catch (error) {
        this.logger.warn(`loans not swept: goods=${goodsId} ${(error as Error).message}`);
      }
      for (const bucket of await this.outbox.buckets(goodsId)) {
        try {
          republished += await this.sweepBucket(goodsId, bucket, at);
        } catch (error) {
          // Another bucket's master may be up: one unreachable master skips only its buckets.
          this.logger.warn(`outbox not swept: goods=${goodsId} ${(error as Error).message}`);
        }
      }
    }
    return republished;
  }

  private async sweepBucket(goodsId: number, keys: SaleKeys, at?: number): Promise<number> {
    let republished = 0;
    const now = at ?? (await this.outbox.clock(keys));
    await this.outbox.forgetOldVoided(keys, now);
    const stale = await this.outbox.stale(keys, now - this.jobs.outboxSweep.staleMs, SWEEP_BATCH);
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
    await this.outbox.markPublished(keys, settled);
    return republished;
  }
}
