import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { overloadConfig, type OverloadConfig } from '../../config/overload.config.js';
import { MetricsService } from '../metrics/metrics.service.js';

/** Why a purchase was shed: the measure that was past its bound. */
export type OverloadReason = 'in_flight' | 'event_loop' | 'confirm_wait';

/** How often the event loop's delay is sampled: a timer due every this many ms. */
export const LOOP_SAMPLE_MS = 20;
/** While purchases are shed, one line at most this often says how many and why. */
export const SHED_LOG_INTERVAL_MS = 10_000;

/**
 * The instance's own measures of how far behind it is, and the one decision made from them:
 * whether a new purchase is taken or shed. Taken at once, in memory, so that shedding costs a
 * crowd nothing but the answer:
 * - purchases in progress (admitted and not yet answered): past the bound, a new one would only
 *   wait behind them, so every queue inside the process (Redis commands, locks, confirms) stays
 *   as short as the bound keeps it;
 * - the event-loop delay (how late a timer due every 20 ms ran): every callback waits this long,
 *   whatever the in-flight count, e.g. when the answers themselves take the whole CPU;
 * - the oldest confirm still awaited: a broker falling behind shows here before purchases pile
 *   up against the in-flight bound.
 */
@Injectable()
export class LoadMonitorService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(LoadMonitorService.name);
  private inFlight = 0;
  /** Shed since the last line, by reason; when that line was written (-Infinity: never). */
  private shedSinceLine = new Map<OverloadReason, number>();
  private lastShedLineAt = -Infinity;
  private loopDelayMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastTick = performance.now();
  /** Confirms awaited, by a sequence number, to when each began; the first is the oldest. */
  private readonly confirms = new Map<number, number>();
  private nextConfirm = 0;

  /** The in-flight count's release, bound once so that the hook hands it out without a closure. */
  readonly leave = (): void => {
    this.inFlight--;
  };

  constructor(
    @InjectConfig(overloadConfig) private readonly config: OverloadConfig,
    private readonly metrics: MetricsService,
  ) {}

  onModuleInit(): void {
    const { purchasesInProgress, overloadLoopDelay, overloadConfirmWait } = this.metrics;
    this.metrics.collectOnScrape(
      'overload',
      [purchasesInProgress, overloadLoopDelay, overloadConfirmWait],
      () => {
        const now = performance.now();
        purchasesInProgress.set(this.inFlight);
        overloadLoopDelay.set(this.currentLoopDelayMs(now) / 1_000);
        overloadConfirmWait.set(this.confirmWaitMs(now) / 1_000);
      },
    );
    // Unref'd: the sampler never keeps a stopping process alive.
    this.timer = setInterval(() => this.tick(performance.now()), LOOP_SAMPLE_MS).unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** One timer run at `now`: how much later than due it ran is the loop's delay. */
  tick(now: number): void {
    this.loopDelayMs = Math.max(0, now - this.lastTick - LOOP_SAMPLE_MS);
    this.lastTick = now;
  }

  /**
   * Null when a new purchase is taken (it is then counted in progress until `leave`), else the
   * measure that is past its bound (the purchase is shed and not counted).
   */
  admit(now = performance.now()): OverloadReason | null {
    const { maxInFlight, maxEventLoopDelayMs, maxConfirmWaitMs } = this.config;
    if (maxInFlight > 0 && this.inFlight >= maxInFlight) return 'in_flight';
    // The delay of the last sample, or, when the sampler is late now, how late it is already:
    // a loop stuck in one long task has not sampled yet.
    if (maxEventLoopDelayMs > 0 && this.currentLoopDelayMs(now) > maxEventLoopDelayMs) {
      return 'event_loop';
    }
    if (maxConfirmWaitMs > 0 && this.confirmWaitMs(now) > maxConfirmWaitMs) return 'confirm_wait';
    this.inFlight++;
    return null;
  }

  /**
   * A purchase was shed for `reason`: counted, and summed up in one line at most every
   * SHED_LOG_INTERVAL_MS (the first of a spell at once), never a line per purchase.
   */
  shed(reason: OverloadReason, now = performance.now()): void {
    this.metrics.purchasesShed.inc({ reason });
    this.shedSinceLine.set(reason, (this.shedSinceLine.get(reason) ?? 0) + 1);
    if (now - this.lastShedLineAt < SHED_LOG_INTERVAL_MS) return;
    const counts = [...this.shedSinceLine].map(([why, n]) => `${why}=${n}`).join(' ');
    const first =
      this.lastShedLineAt === -Infinity || now - this.lastShedLineAt > 2 * SHED_LOG_INTERVAL_MS;
    this.logger.warn(
      `${first ? 'shedding purchases' : 'still shedding purchases'}: shed ${counts} inFlight=${this.inFlight} loopDelayMs=${Math.round(this.currentLoopDelayMs(now))} confirmWaitMs=${Math.round(this.confirmWaitMs(now))}`,
    );
    this.shedSinceLine = new Map();
    this.lastShedLineAt = now;
  }

  /**
   * The Retry-After of a shed purchase: OVERLOAD_RETRY_AFTER_SECONDS to twice that, drawn, so
   * that the buyers shed in one burst do not all come back in the same second.
   */
  retryAfterSeconds(): number {
    const base = this.config.retryAfterSeconds;
    return base + Math.floor(Math.random() * (base + 1));
  }

  /** A publish is waiting for the broker's confirm; call the answer when it came (or failed). */
  confirmStarted(now = performance.now()): () => void {
    const id = this.nextConfirm++;
    this.confirms.set(id, now);
    return () => void this.confirms.delete(id);
  }

  purchasesInProgress(): number {
    return this.inFlight;
  }

  private currentLoopDelayMs(now: number): number {
    return Math.max(this.loopDelayMs, now - this.lastTick - LOOP_SAMPLE_MS);
  }

  private confirmWaitMs(now = performance.now()): number {
    for (const started of this.confirms.values()) return now - started;
    return 0;
  }
}
