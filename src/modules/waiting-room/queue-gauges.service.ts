import { Injectable, OnModuleInit } from '@nestjs/common';
import { GoodsService } from '../goods/goods.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { QueueScripts } from './queue.scripts.js';
import { isRoomSale } from './room-sale.js';

/**
 * The open waiting rooms, read at each scrape by every instance alike (the admission job runs on
 * one at a time): whether it started, who waits, who is admitted and deciding, the stock left, whether the operator
 * paused it and whether its clock is stopped. An alert tells a stalled room from these: people
 * waiting after the start, stock left, nobody deciding, not paused, and no admission (seckill_queue_admissions_total).
 */
@Injectable()
export class QueueGaugesService implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly goods: GoodsService,
    private readonly scripts: QueueScripts,
  ) {}

  onModuleInit(): void {
    const m = this.metrics;
    this.metrics.collectOnScrape(
      'queues',
      [
        m.queueStarted,
        m.queueWaiting,
        m.queueDeciding,
        m.queuePaused,
        m.queueClockStopped,
        m.queueStockLeft,
      ],
      () => this.read(),
    );
  }

  private async read(): Promise<void> {
    const sales = (await this.goods.openQueues()).filter(isRoomSale);
    await Promise.all(
      sales.map(async (sale) => {
        const room = await this.scripts.room(sale.id, sale.endAt.getTime());
        const goods = String(sale.id);
        this.metrics.queueStarted.set({ goods }, Date.now() >= sale.startAt.getTime() ? 1 : 0);
        this.metrics.queueWaiting.set({ goods }, room.waiting);
        this.metrics.queueDeciding.set({ goods }, room.deciding);
        this.metrics.queuePaused.set({ goods }, sale.admissionPaused ? 1 : 0);
        this.metrics.queueClockStopped.set({ goods }, room.stopped ? 1 : 0);
        if (room.stock !== null) this.metrics.queueStockLeft.set({ goods }, room.stock);
      }),
    );
  }
}
