import { Injectable, OnModuleInit } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service.js';
import { OutboxReaderStore } from '../sale-store/outbox-reader.store.js';

/**
 * The live sales' purchases on their way to MySQL, read from Redis at each scrape, by every
 * instance alike (whichever runs the sweeper and the consumer): how many are unwritten and the
 * age of the oldest (the consumer's lag in time), how many the broker has not confirmed and the
 * age of the oldest (the outbox, which the sweeper republishes). One series per preheated sale:
 * the index of preheated sales is what bounds the goods label.
 */
@Injectable()
export class BacklogGaugesService implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly outbox: OutboxReaderStore,
  ) {}

  onModuleInit(): void {
    const { ordersUnwritten, oldestUnwrittenAge, outboxEntries, outboxOldestAge } = this.metrics;
    this.metrics.collectOnScrape(
      'backlog',
      [ordersUnwritten, oldestUnwrittenAge, outboxEntries, outboxOldestAge],
      () => this.read(),
    );
  }

  private async read(): Promise<void> {
    const sales = await this.outbox.sales();
    await Promise.all(sales.map((goodsId) => this.readSale(goodsId)));
  }

  private async readSale(goodsId: number): Promise<void> {
    let unwritten = 0;
    let outbox = 0;
    let oldestUnwrittenAge = 0;
    let oldestOutboxAge = 0;
    for (const keys of await this.outbox.buckets(goodsId)) {
      const backlog = await this.outbox.backlog(keys);
      unwritten += backlog.unwritten;
      outbox += backlog.outbox;
      if (backlog.oldestAcceptedAt !== null) {
        oldestUnwrittenAge = Math.max(oldestUnwrittenAge, Date.now() - backlog.oldestAcceptedAt);
      }
      // Stamped on the bucket's clock (its master's TIME): aged on the same clock.
      if (backlog.oldestOutboxAt !== null) {
        const now = await this.outbox.clock(keys);
        oldestOutboxAge = Math.max(oldestOutboxAge, now - backlog.oldestOutboxAt);
      }
    }
    const goods = String(goodsId);
    this.metrics.ordersUnwritten.set({ goods }, unwritten);
    this.metrics.outboxEntries.set({ goods }, outbox);
    this.metrics.oldestUnwrittenAge.set({ goods }, Math.max(0, oldestUnwrittenAge) / 1_000);
    this.metrics.outboxOldestAge.set({ goods }, Math.max(0, oldestOutboxAge) / 1_000);
  }
}
