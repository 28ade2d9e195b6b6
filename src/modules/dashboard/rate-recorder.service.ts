import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service.js';
import { DashboardStore } from './dashboard.store.js';
import { RATE_WINDOW_SECONDS } from './sale-board.service.js';

const FLUSH_INTERVAL_MS = 1_000;
/** A second's counts outlive the chart's window by a minute, then Redis drops them. */
const RATE_TTL_SECONDS = RATE_WINDOW_SECONDS + 60;
const WARN_EVERY_MS = 10_000;

/**
 * Once a second, adds this instance's purchase answers of the seconds that are over (counted in
 * memory by MetricsService.purchaseTally) to the sale's per-second hashes in Redis, where every
 * instance's counts meet: one HINCRBY per goods and outcome and one EXPIRE per goods, per
 * second with answers; nothing when there were none, and never on the purchase path. Counts that
 * fail to reach Redis are dropped (the chart shows a dip), never retried into a later second.
 */
@Injectable()
export class RateRecorderService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(RateRecorderService.name);
  private timer?: NodeJS.Timeout;
  private lastWarnAt = 0;

  constructor(
    private readonly store: DashboardStore,
    private readonly metrics: MetricsService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  /** Writes the seconds that are over by `now` (the current one too at shutdown). */
  async flush(now = Date.now()): Promise<void> {
    const writes: Promise<unknown>[] = [];
    for (const { second, counts } of this.metrics.purchaseTally.takeCompleted(now)) {
      for (const [goodsId, byOutcome] of counts) {
        writes.push(this.store.addRates(goodsId, second, byOutcome, RATE_TTL_SECONDS));
      }
    }
    if (writes.length === 0) return;
    const failed = (await Promise.allSettled(writes)).find(
      (result): result is PromiseRejectedResult => result.status === 'rejected',
    );
    if (failed && Date.now() - this.lastWarnAt > WARN_EVERY_MS) {
      this.lastWarnAt = Date.now();
      this.logger.warn(
        `purchase rates not recorded: ${(failed.reason as Error).message} (the dashboard's chart misses them)`,
      );
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush(Date.now() + FLUSH_INTERVAL_MS);
  }
}
