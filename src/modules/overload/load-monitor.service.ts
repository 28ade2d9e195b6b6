import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { overloadConfig, type OverloadConfig } from '../../config/overload.config.js';
import { MetricsService } from '../metrics/metrics.service.js';

/** A shed buyer's Retry-After: until when (performance.now()) and how many seconds they were told. */
interface Hold {
  until: number;
  seconds: number;
}

/**
 * Why a purchase was shed: the measure that was past its bound, or (`retry_early`) a buyer who
 * came back before the Retry-After this instance gave them.
 */
export type OverloadReason = 'in_flight' | 'event_loop' | 'confirm_wait' | 'retry_early';

/** How often the event loop's delay is sampled: a timer due every this many ms. */
export const LOOP_SAMPLE_MS = 20;
/** While purchases are shed, one line at most this often says how many and why. */
export const SHED_LOG_INTERVAL_MS = 10_000;
/** How often the pace of the shed answers is measured and the Retry-After set from it. */
export const PACE_WINDOW_MS = 1_000;
/** Buyers held to their Retry-After at once, at most (memory): past it, no more are held. */
export const MAX_HELD_BUYERS = 1_000_000;
/** How long after their time a shed buyer's return is still known as one. */
export const HOLD_MEMORY_MS = 60_000;
/** A client that waits its Retry-After to the second, rounding and timers included, is on time. */
const ON_TIME_SLACK_MS = 100;
/** A window's purchase latencies are counted in 1 ms buckets up to this (the last holds the rest). */
const LATENCY_BUCKETS = 10_000;
/** A window that took fewer purchases than this says too little of their p99: the bound is kept. */
export const LATENCY_MIN_SAMPLES = 50;
/** The measured in-flight bound never falls below this: a few slow answers do not close the door. */
export const MIN_MEASURED_BOUND = 16;
/** Where a measured bound starts (within OVERLOAD_MAX_IN_FLIGHT): it is raised from there. */
export const FIRST_MEASURED_BOUND = 64;
/**
 * The measured bound is raised only while the window's p99 is under this share of the target, by
 * at most this factor: a second's p99 is noisy, and a raise that overshoots costs a window past
 * the target before the cut.
 */
const RAISE_BELOW = 0.75;
const MAX_RAISE = 1.5;
/** The measured bound's ceiling when OVERLOAD_MAX_IN_FLIGHT is 0. */
const MEASURED_BOUND_CEILING = 100_000;

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
 *
 * And what a shed purchase is told: the Retry-After is paced so that the shed buyers' returns stay
 * a small share (OVERLOAD_RETRY_SHARE_PERCENT) of the purchases taken. Each return is an HTTP
 * exchange that takes nothing: at ten times the connections an instance can serve, returns after
 * one or two seconds took a quarter of its CPU from the purchases. A return is a buyer (known by
 * the token) who comes back after the Retry-After this instance gave them; by Little's law the
 * seconds told to the buyers back in a second are how many people wait to come back, and the
 * mean Retry-After is that many over the returns per second aimed at. (Scaling the mean by the
 * returns themselves swung it from rest to the bound and back: the returns answer the mean told
 * a wait ago.) A buyer who comes back before their Retry-After is shed
 * again (`retry_early`) and told the time left, without a chance at a free place: a script that
 * ignores it takes no place from a person who waits as told. A script that sends each purchase
 * as a new account never returns: it is not paced (it would not wait), and it does not lengthen
 * the wait of the people who do.
 */
@Injectable()
export class LoadMonitorService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(LoadMonitorService.name);
  private inFlight = 0;
  /**
   * The most purchases in progress taken now (0: none): OVERLOAD_MAX_IN_FLIGHT, or with a
   * latency target, measured each pace window (`measureBound`).
   */
  private bound: number;
  /** This window's taken purchases by latency (ms buckets), how many, and the most at once. */
  private readonly latencies = new Uint32Array(LATENCY_BUCKETS);
  private latencySamples = 0;
  private inFlightPeak = 0;
  /** Whether the bound turned a purchase away in this window. */
  private boundShed = false;
  /** Shed since the last line, by reason; when that line was written (-Infinity: never). */
  private shedSinceLine = new Map<OverloadReason, number>();
  private lastShedLineAt = -Infinity;
  private loopDelayMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastTick = performance.now();
  /** Confirms awaited, by a sequence number, to when each began; the first is the oldest. */
  private readonly confirms = new Map<number, number>();
  private nextConfirm = 0;
  /**
   * Shed buyers, by user id, to when (performance.now()) they may come back; kept for
   * HOLD_MEMORY_MS after that, so that their return is known as one.
   */
  private readonly held = new Map<number, Hold>();
  /** The pace's window: since when, purchases taken in it, the seconds told to those back in it. */
  private windowStart = performance.now();
  private takenInWindow = 0;
  private returnedWaitInWindow = 0;
  /** The people waiting to come back (Little's law on the returns), smoothed as they fall. */
  private waiting = 0;
  /**
   * The most purchases taken in a second lately (it decays by a tenth a window): what the
   * instance can take, where the last window's own count is only what it was asked for (a burst
   * on a quiet instance).
   */
  private takenPeak = 0;
  /** The mean Retry-After (s) a shed purchase is told now. */
  private meanRetryAfter: number;

  /**
   * A taken purchase was answered (or its client went away): no longer in progress; with
   * `startedAt` (performance.now() when it was taken), its latency counts toward the window's p99.
   */
  readonly leave = (startedAt?: number, now = performance.now()): void => {
    this.inFlight--;
    if (startedAt === undefined || !this.measuresLatency) return;
    const ms = Math.floor(now - startedAt);
    this.latencies[Math.min(LATENCY_BUCKETS - 1, Math.max(0, ms))]++;
    this.latencySamples++;
  };

  constructor(
    @InjectConfig(overloadConfig) private readonly config: OverloadConfig,
    private readonly metrics: MetricsService,
  ) {
    this.meanRetryAfter = this.restingRetryAfter();
    this.bound =
      config.latencyTargetMs > 0
        ? Math.min(this.boundCeiling(), FIRST_MEASURED_BOUND)
        : config.maxInFlight;
  }

  onModuleInit(): void {
    const {
      purchasesInProgress,
      overloadInFlightBound,
      overloadLoopDelay,
      overloadConfirmWait,
      overloadRetryAfter,
    } = this.metrics;
    this.metrics.collectOnScrape(
      'overload',
      [
        purchasesInProgress,
        overloadInFlightBound,
        overloadLoopDelay,
        overloadConfirmWait,
        overloadRetryAfter,
      ],
      () => {
        const now = performance.now();
        purchasesInProgress.set(this.inFlight);
        overloadInFlightBound.set(this.bound);
        overloadLoopDelay.set(this.currentLoopDelayMs(now) / 1_000);
        overloadConfirmWait.set(this.confirmWaitMs(now) / 1_000);
        overloadRetryAfter.set(this.meanRetryAfter);
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
    if (now - this.windowStart >= PACE_WINDOW_MS) this.pace(now);
  }

  /**
   * Null when a new purchase is taken (it is then counted in progress until `leave`), else why
   * it is shed (it is then not counted): `userId`'s Retry-After has not passed, or a measure is
   * past its bound.
   */
  admit(userId?: number, now = performance.now()): OverloadReason | null {
    if (userId !== undefined && this.held.size > 0) {
      const hold = this.held.get(userId);
      if (hold !== undefined) {
        if (now < hold.until) return 'retry_early';
        this.held.delete(userId);
        this.returnedWaitInWindow += hold.seconds;
      }
    }
    const { maxEventLoopDelayMs, maxConfirmWaitMs } = this.config;
    if (this.bound > 0 && this.inFlight >= this.bound) {
      this.boundShed = true;
      return 'in_flight';
    }
    // The delay of the last sample, or, when the sampler is late now, how late it is already:
    // a loop stuck in one long task has not sampled yet.
    if (maxEventLoopDelayMs > 0 && this.currentLoopDelayMs(now) > maxEventLoopDelayMs) {
      return 'event_loop';
    }
    if (maxConfirmWaitMs > 0 && this.confirmWaitMs(now) > maxConfirmWaitMs) return 'confirm_wait';
    this.inFlight++;
    this.takenInWindow++;
    if (this.inFlight > this.inFlightPeak) this.inFlightPeak = this.inFlight;
    return null;
  }

  /**
   * A purchase was shed for `reason`: counted, and summed up in one line at most every
   * SHED_LOG_INTERVAL_MS (the first of a spell at once), never a line per purchase. Returns its
   * Retry-After in seconds: drawn about the pace's mean (and `userId` held to it), or for
   * `retry_early` the time the buyer has left.
   */
  shed(reason: OverloadReason, userId?: number, now = performance.now()): number {
    this.count(reason, now);
    if (reason === 'retry_early') {
      const until = (userId === undefined ? undefined : this.held.get(userId))?.until ?? now;
      return Math.max(1, Math.ceil((until - now) / 1_000));
    }
    const seconds = this.drawRetryAfter();
    if (userId !== undefined && this.held.size < MAX_HELD_BUYERS) {
      this.held.set(userId, { until: now + seconds * 1_000 - ON_TIME_SLACK_MS, seconds });
    }
    return seconds;
  }

  /** The mean Retry-After (s) a shed purchase is told now. */
  retryAfterMean(): number {
    return this.meanRetryAfter;
  }

  /** Whether taken purchases' latencies set the bound (OVERLOAD_LATENCY_TARGET_MS): `leave` wants them. */
  get measuresLatency(): boolean {
    return this.config.latencyTargetMs > 0;
  }

  /** The most purchases in progress taken now (0: no bound). */
  inFlightBound(): number {
    return this.bound;
  }

  private count(reason: OverloadReason, now: number): void {
    this.metrics.purchasesShed.inc({ reason });
    this.shedSinceLine.set(reason, (this.shedSinceLine.get(reason) ?? 0) + 1);
    if (now - this.lastShedLineAt < SHED_LOG_INTERVAL_MS) return;
    const counts = [...this.shedSinceLine].map(([why, n]) => `${why}=${n}`).join(' ');
    const first =
      this.lastShedLineAt === -Infinity || now - this.lastShedLineAt > 2 * SHED_LOG_INTERVAL_MS;
    this.logger.warn(
      `${first ? 'shedding purchases' : 'still shedding purchases'}: shed ${counts} inFlight=${this.inFlight} bound=${this.bound} loopDelayMs=${Math.round(this.currentLoopDelayMs(now))} confirmWaitMs=${Math.round(this.confirmWaitMs(now))} retryAfterMeanS=${this.meanRetryAfter.toFixed(1)}`,
    );
    this.shedSinceLine = new Map();
    this.lastShedLineAt = now;
  }

  /**
   * A Retry-After drawn from two thirds to four thirds of the mean (at rest:
   * OVERLOAD_RETRY_AFTER_SECONDS to twice that), so that the buyers shed in one burst do not all
   * come back in the same second.
   */
  private drawRetryAfter(): number {
    const low = Math.max(this.config.retryAfterSeconds, Math.round((this.meanRetryAfter * 2) / 3));
    const high = Math.max(low, Math.round((this.meanRetryAfter * 4) / 3));
    return low + Math.floor(Math.random() * (high - low + 1));
  }

  /** The mean Retry-After while few are shed: that of OVERLOAD_RETRY_AFTER_SECONDS to twice it. */
  private restingRetryAfter(): number {
    return 1.5 * this.config.retryAfterSeconds;
  }

  /**
   * The end of a pace window: the people waiting to come back counted (the seconds told to those
   * back in it, per second), and the mean Retry-After set to that many over
   * OVERLOAD_RETRY_SHARE_PERCENT of what the instance takes per second, at most doubled a window
   * and kept from OVERLOAD_RETRY_AFTER_SECONDS's rest to OVERLOAD_RETRY_AFTER_MAX_SECONDS; buyers
   * long past their time forgotten.
   */
  private pace(now: number): void {
    const seconds = (now - this.windowStart) / 1_000;
    const { retryShare, retryAfterMaxSeconds } = this.config;
    const resting = this.restingRetryAfter();
    this.takenPeak = Math.max(this.takenPeak * 0.9, this.takenInWindow / seconds);
    // Up at once (a crowd's returns cost from their first second), down smoothed.
    const waitingNow = this.returnedWaitInWindow / seconds;
    this.waiting = Math.max(waitingNow, (this.waiting + waitingNow) / 2);
    const wanted =
      retryShare > 0 ? this.waiting / (retryShare * Math.max(1, this.takenPeak)) : resting;
    this.meanRetryAfter = Math.min(
      // At most doubled a window: one window's count is not yet a crowd.
      Math.max(Math.min(wanted, 2 * this.meanRetryAfter), resting),
      // The draw reaches four thirds of the mean: the longest told stays within the bound.
      Math.max(resting, (retryAfterMaxSeconds * 3) / 4),
    );
    this.measureBound();
    this.windowStart = now;
    this.takenInWindow = 0;
    this.returnedWaitInWindow = 0;
    if (this.held.size > 0) {
      for (const [userId, { until }] of this.held) {
        if (until + HOLD_MEMORY_MS <= now) this.held.delete(userId);
      }
    }
  }

  /**
   * With OVERLOAD_LATENCY_TARGET_MS, the end of a pace window sets the in-flight bound from the
   * p99 of the purchases taken in it. At a given rate the purchases in progress and their latency
   * are proportional (Little's law), so past the target the bound is cut to the most in progress
   * this window times target/p99 (at most halved a window); while the p99 is under three quarters
   * of the target and the bound turned purchases away, it is raised by the square root of the
   * headroom (at most by half): the bound settles where the purchases taken keep the target,
   * which is where this instance takes the most it can at that latency. A window of few
   * purchases keeps it.
   */
  private measureBound(): void {
    const target = this.config.latencyTargetMs;
    if (target > 0 && this.latencySamples >= LATENCY_MIN_SAMPLES) {
      const p99 = this.latencyP99();
      if (p99 > target) {
        const from = Math.min(this.bound, this.inFlightPeak);
        const cut = Math.floor(from * Math.max(0.5, target / p99));
        this.bound = Math.max(Math.min(MIN_MEASURED_BOUND, this.boundCeiling()), cut);
      } else if (this.boundShed && p99 <= RAISE_BELOW * target) {
        const raise = Math.min(MAX_RAISE, Math.sqrt(target / Math.max(1, p99)));
        this.bound = Math.min(this.boundCeiling(), Math.ceil(this.bound * raise));
      }
    }
    if (this.latencySamples > 0) this.latencies.fill(0);
    this.latencySamples = 0;
    this.inFlightPeak = this.inFlight;
    this.boundShed = false;
  }

  /** The window's p99 latency (ms, to the bucket's upper edge). */
  private latencyP99(): number {
    const rank = Math.ceil(this.latencySamples * 0.99);
    let seen = 0;
    for (let ms = 0; ms < LATENCY_BUCKETS; ms++) {
      seen += this.latencies[ms];
      if (seen >= rank) return ms + 1;
    }
    return LATENCY_BUCKETS;
  }

  private boundCeiling(): number {
    return this.config.maxInFlight > 0 ? this.config.maxInFlight : MEASURED_BOUND_CEILING;
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
