import { Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { InjectConfig } from '../../config/config-namespace.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { GoodsService } from '../goods/goods.service.js';
import { ADMIT_BATCH, QueueScripts } from './queue-scripts.js';
import { isQueueSale, type QueueSale } from './waiting-room.service.js';

/** How long the list of open queues is reused before MySQL is asked again. */
const SALES_REFRESH_MS = 1_000;

/**
 * Each tick, every open queue one step on (lua/queue-tick.lua): the shuffle's seed at startAt,
 * lapsed admissions out, the next buyers in, within admitPerSecond and the stock. Run by one working
 * instance at a time (WaitingRoomCron); the script is atomic all the same, so that two instances
 * ticking at once would only share the same budget.
 */
@Injectable()
export class AdmissionPacer {
  private readonly logger = new Logger(AdmissionPacer.name);
  private sales: { list: QueueSale[]; until: number } = { list: [], until: 0 };

  constructor(
    private readonly goods: GoodsService,
    private readonly scripts: QueueScripts,
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
  ) {}

  /** Throws, once every queue had its step, naming those that failed (the job logs it). */
  async tick(): Promise<void> {
    const failed: { goodsId: number; error: Error }[] = [];
    for (const sale of await this.openQueues()) {
      try {
        await this.step(sale);
      } catch (error) {
        failed.push({ goodsId: sale.id, error: error as Error });
      }
    }
    if (failed.length > 0) {
      throw new Error(
        `queue step failed: goods=${failed.map((f) => f.goodsId).join(',')} ${failed[0].error.message}`,
      );
    }
  }

  private async step(sale: QueueSale): Promise<void> {
    // Full batches (ADMIT_BATCH) are followed by another call, for up to one tick period.
    const deadline = Date.now() + this.config.tickMs;
    let admitted = 0;
    let lapsed = 0;
    for (;;) {
      const result = await this.scripts.tick(sale.id, {
        startAt: sale.startAt.getTime(),
        endAt: sale.endAt.getTime(),
        admitPerSecond: sale.admitPerSecond,
        admissionTtlMs: sale.admissionTtlSeconds * 1_000,
        stockFactor: this.config.admitStockFactor,
        // Only the first candidate after startAt is kept (HSETNX): drawn here, never by a client.
        // 128 bits, so that a round of the shuffle (lua/lib/queue-order.lua) hashes one SHA1 block.
        seedCandidate: randomBytes(16).toString('hex'),
        paused: sale.admissionPaused,
      });
      if (result.drawn) this.logger.log(`queue order drawn: goods=${sale.id}`);
      admitted += result.admitted;
      lapsed += result.lapsed;
      if (result.admitted < ADMIT_BATCH || Date.now() >= deadline) break;
    }
    if (admitted > 0 || lapsed > 0) {
      this.logger.debug(`queue admitted: goods=${sale.id} admitted=${admitted} lapsed=${lapsed}`);
    }
  }

  private async openQueues(): Promise<QueueSale[]> {
    const now = Date.now();
    if (now >= this.sales.until) {
      this.sales = {
        list: (await this.goods.openQueues()).filter(isQueueSale),
        until: now + SALES_REFRESH_MS,
      };
    }
    return this.sales.list;
  }
}
