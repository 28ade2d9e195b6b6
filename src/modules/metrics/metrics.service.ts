import { Injectable, Logger } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AnswerHistogram } from './answer-histogram.js';
import { PurchaseTally } from './purchase-tally.js';

/** Seconds: 1 ms to 10 s, about three a decade. */
export const HTTP_DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Seconds: a purchase's steps, from half a millisecond (a Lua call) to 5 s (a confirm held up). */
export const STAGE_DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];

/** Seconds from a purchase's acceptance to its order row: 10 ms (a batch's wait) to 5 min. */
export const WRITE_LAG_BUCKETS = [
  0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];

/**
 * How long one collector may read its stores for a scrape: Prometheus's own timeout is 10 s by
 * default, and a store that does not answer must not hold up the other metrics.
 */
export const SCRAPE_READ_MS = 2_000;

/** Which store decided a purchase. */
export type PurchaseMode = 'redis' | 'database';

/** A feature's scrape-time reading: the gauges it sets, and how it reads them. */
interface Collector {
  gauges: Gauge[];
  read: () => Promise<void> | void;
}

@Injectable()
export class MetricsService {
  /** One registry per app instance (tests run several in one process). */
  readonly registry = new Registry();

  /**
   * Every answer's duration. Buckets from 1 ms (a sold-out answer from memory) to 10 s (the
   * request timeout's order): a latency SLO's threshold falls on one of them.
   */
  readonly httpDuration = new AnswerHistogram(
    'seckill_http_request_duration_seconds',
    "Time from a request's arrival to its answer, by method, route pattern (unmatched: no route) and status",
    HTTP_DURATION_BUCKETS,
    this.registry,
  );

  readonly purchases = new Counter({
    name: 'seckill_purchases_total',
    help: 'Purchase attempts by outcome (ACCEPTED or the error code) and by the mode that answered (redis, or database while Redis is down or rebuilt)',
    labelNames: ['outcome', 'mode'] as const,
    registers: [this.registry],
  });

  readonly stockLoans = new Counter({
    name: 'seckill_stock_loans_total',
    help: "Stock borrowed by a purchase from a bucket other than its buyer's home bucket, by event (taken; returned at once; swept: given back by the loan sweeper)",
    labelNames: ['event'] as const,
    registers: [this.registry],
  });

  readonly throttled = new Counter({
    name: 'seckill_throttled_total',
    help: 'Requests refused with 429, by the throttler that refused them (e.g. purchase-user)',
    labelNames: ['throttler'] as const,
    registers: [this.registry],
  });

  readonly blocked = new Counter({
    name: 'seckill_blocked_total',
    help: 'Requests refused with 403 because the user or client address is blocklisted, by type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly autobans = new Counter({
    name: 'seckill_autobans_total',
    help: 'Clients blocklisted for being throttled more than AUTOBAN_THRESHOLD times in the window',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly orderMessages = new Counter({
    name: 'seckill_order_messages_total',
    help: 'Order messages consumed, by outcome (written, duplicate, rejected, voided, dead_lettered, requeued)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly publishes = new Counter({
    name: 'seckill_publishes_total',
    help: 'Messages published, by result (confirmed, unconfirmed, unroutable)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly timeoutMessages = new Counter({
    name: 'seckill_timeout_messages_total',
    help: 'Payment-timeout messages consumed, by outcome (cancelled, already_cancelled, paid, not_found, not_due, dead_lettered)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly orderTransitions = new Counter({
    name: 'seckill_order_transitions_total',
    help: 'Order state changes, by the status reached (PAID, CANCELLED, REFUND_REQUIRED)',
    labelNames: ['to'] as const,
    registers: [this.registry],
  });

  readonly merchantEvents = new Counter({
    name: 'seckill_merchant_events_total',
    help: "Deliveries of order events to the merchant's webhook, by outcome (delivered, failed, parked)",
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly paymentEvents = new Counter({
    name: 'seckill_payment_events_total',
    help: "The payment provider's webhook events, by type and outcome (paid, retaken, refund_required, extended, unchanged, duplicate, mismatch, bad_signature)",
    labelNames: ['type', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly ordersByStatus = new Gauge({
    name: 'seckill_orders',
    help: 'Ordered quantity per goods and status, as of the last reconcile run',
    labelNames: ['goods', 'status'] as const,
    registers: [this.registry],
  });

  readonly reconcileDrift = new Gauge({
    name: 'seckill_reconcile_drift',
    help: 'Units unaccounted for per goods and store (0 when consistent), as of the last reconcile run',
    labelNames: ['goods', 'store'] as const,
    registers: [this.registry],
  });

  readonly queueDepth = new Gauge({
    name: 'seckill_queue_messages',
    help: 'Messages ready in a queue (consumer lag), as of the last reconcile run',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });

  readonly resultStreams = new Gauge({
    name: 'seckill_result_streams',
    help: 'Result streams (GET /api/v1/seckill/:goodsId/result/stream) open on this instance',
    registers: [this.registry],
  });

  readonly queueStreams = new Gauge({
    name: 'seckill_queue_streams',
    help: 'Queue streams (GET /api/v1/seckill/:goodsId/queue/stream) open on this instance',
    registers: [this.registry],
  });

  readonly versionConflicts = new Counter({
    name: 'seckill_version_conflicts_total',
    help: 'Optimistic-lock conflicts on the goods row (each cost a retry)',
    registers: [this.registry],
  });

  /** This instance's purchase answers per goods and second, for the dashboard (in memory). */
  readonly purchaseTally = new PurchaseTally();

  readonly fallbackInflight = new Gauge({
    name: 'seckill_fallback_inflight',
    help: 'Database-mode purchases (Redis down or rebuilt) in progress on this instance',
    registers: [this.registry],
  });

  readonly fallbackRefusals = new Counter({
    name: 'seckill_fallback_refusals_total',
    help: 'Purchases answered 503 without a sale around the Redis-down fallback: over FALLBACK_MAX_INFLIGHT (busy), before the fallback barrier passed (closed), or taken by Redis while the sale was being held from it and given back (held)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly purchasesShed = new Counter({
    name: 'seckill_purchases_shed_total',
    help: 'Purchases shed at once with 503 OVERLOADED, by the measure past its bound: purchases in progress (in_flight), the event-loop delay (event_loop), the oldest confirm awaited (confirm_wait); or a buyer back before the Retry-After given (retry_early)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly purchasesInProgress = new Gauge({
    name: 'seckill_purchases_in_progress',
    help: 'Purchases admitted on this instance and not yet answered (OVERLOAD_MAX_IN_FLIGHT bounds them)',
    registers: [this.registry],
  });

  readonly overloadInFlightBound = new Gauge({
    name: 'seckill_overload_in_flight_bound',
    help: 'The most purchases in progress this instance takes now (0: no bound): OVERLOAD_MAX_IN_FLIGHT, or measured each second against OVERLOAD_LATENCY_TARGET_MS',
    registers: [this.registry],
  });

  readonly overloadLoopDelay = new Gauge({
    name: 'seckill_overload_event_loop_delay_seconds',
    help: 'The event-loop delay as the shedding reads it: how late its last 20 ms timer ran (OVERLOAD_MAX_EVENT_LOOP_DELAY_MS bounds it)',
    registers: [this.registry],
  });

  readonly overloadConfirmWait = new Gauge({
    name: 'seckill_overload_confirm_wait_seconds',
    help: "How long the oldest purchase still waiting for the broker's confirm has waited (OVERLOAD_MAX_CONFIRM_WAIT_MS bounds it)",
    registers: [this.registry],
  });

  readonly overloadRetryAfter = new Gauge({
    name: 'seckill_overload_retry_after_seconds',
    help: 'The mean Retry-After a shed purchase is told now: OVERLOAD_RETRY_AFTER_SECONDS and twice it at rest, longer while the shed come back faster than OVERLOAD_RETRY_SHARE_PERCENT of the purchases taken',
    registers: [this.registry],
  });

  readonly saleStateLockBusy = new Counter({
    name: 'seckill_sale_state_lock_busy_total',
    help: "Wipes, loads and repairs of a sale's Redis keys put off because another path held the goods' sale-state lock",
    labelNames: ['path'] as const,
    registers: [this.registry],
  });

  readonly purchaseStages = new Histogram({
    name: 'seckill_purchase_stage_duration_seconds',
    help: "A Redis-path purchase's steps: the per-user lock (lock), the Lua check-and-deduct (deduct), the publish until the broker's confirm (confirm)",
    labelNames: ['stage'] as const,
    buckets: STAGE_DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly orderBatchWrites = new Histogram({
    name: 'seckill_order_batch_write_duration_seconds',
    help: "The consumer's write of one goods' batch of purchases to MySQL, retries included",
    buckets: HTTP_DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly orderWriteLag = new Histogram({
    name: 'seckill_order_write_lag_seconds',
    help: "Time from a purchase's acceptance (its 202) to its order row committed by the consumer",
    buckets: WRITE_LAG_BUCKETS,
    registers: [this.registry],
  });

  readonly ordersUnwritten = new Gauge({
    name: 'seckill_orders_unwritten',
    help: 'Accepted purchases of a live sale not yet written to MySQL as orders (read from Redis at scrape)',
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly oldestUnwrittenAge = new Gauge({
    name: 'seckill_order_oldest_unwritten_age_seconds',
    help: "Age of a live sale's oldest accepted purchase not yet written to MySQL, 0 when none: the consumer's lag (read from Redis at scrape)",
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly outboxEntries = new Gauge({
    name: 'seckill_outbox_entries',
    help: 'Accepted purchases of a live sale whose publish the broker has not confirmed (read from Redis at scrape)',
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly outboxOldestAge = new Gauge({
    name: 'seckill_outbox_oldest_age_seconds',
    help: 'Age of the oldest of those, 0 when none (read from Redis at scrape)',
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly queueAdmissions = new Counter({
    name: 'seckill_queue_admissions_total',
    help: "Buyers admitted from a queue sale's waiting room (counted by the instance that ran the admission job)",
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly queueStarted = new Gauge({
    name: 'seckill_queue_started',
    help: "1 once an open queue sale's start passed (its room admits from then on), 0 while its room only fills (read at scrape)",
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly queueWaiting = new Gauge({
    name: 'seckill_queue_waiting',
    help: "Buyers in an open queue sale's waiting room not admitted yet (read from Redis at scrape)",
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly queueDeciding = new Gauge({
    name: 'seckill_queue_deciding',
    help: 'Admitted buyers of an open queue sale who have neither bought nor lapsed (read from Redis at scrape)',
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly queuePaused = new Gauge({
    name: 'seckill_queue_paused',
    help: "1 while the operator holds an open queue sale's admission (read from MySQL's list at scrape)",
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly queueClockStopped = new Gauge({
    name: 'seckill_queue_clock_stopped',
    help: "1 while an open queue sale's room clock is stopped: the sale cannot sell, nobody's admission is spent (read from Redis at scrape)",
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly queueStockLeft = new Gauge({
    name: 'seckill_queue_stock_left',
    help: 'Units an open queue sale has left in Redis; absent while the sale is not in Redis (read at scrape)',
    labelNames: ['goods'] as const,
    registers: [this.registry],
  });

  readonly redisReady = new Gauge({
    name: 'seckill_redis_ready',
    help: '1 when every Redis master this instance sells through is connected and identified (its run_id read since the connection was made), else 0',
    registers: [this.registry],
  });

  readonly mysqlPoolConnections = new Gauge({
    name: 'seckill_mysql_pool_connections',
    help: "This instance's MySQL connections by pool (primary, replica) and state (used, free)",
    labelNames: ['pool', 'state'] as const,
    registers: [this.registry],
  });

  readonly mysqlPoolWaiting = new Gauge({
    name: 'seckill_mysql_pool_waiting',
    help: 'Queries of this instance waiting for a free MySQL connection, by pool',
    labelNames: ['pool'] as const,
    registers: [this.registry],
  });

  readonly scrapeReadFailures = new Counter({
    name: 'seckill_scrape_read_failures_total',
    help: 'Scrapes whose read of a store failed or took over 2 s, by collector: its series were left out of that scrape',
    labelNames: ['collector'] as const,
    registers: [this.registry],
  });

  private readonly logger = new Logger(MetricsService.name);
  private readonly collectors = new Map<string, Collector>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Registers what a feature reads at each scrape (its live sales' backlog, its rooms), so that
   * every instance answers the same figures whichever of them runs the jobs. `gauges` are
   * cleared before each read: a sale that ended leaves no series behind, nor does a failed read.
   */
  collectOnScrape(name: string, gauges: Gauge[], read: () => Promise<void> | void): void {
    this.collectors.set(name, { gauges, read });
  }

  /** The exposition, after every collector read its stores (each bounded by SCRAPE_READ_MS). */
  async scrape(): Promise<string> {
    await Promise.all(
      [...this.collectors].map(async ([name, collector]) => {
        for (const gauge of collector.gauges) gauge.reset();
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            Promise.resolve().then(collector.read),
            new Promise((_, reject) => {
              timer = setTimeout(
                () => reject(new Error(`no answer within ${SCRAPE_READ_MS} ms`)),
                SCRAPE_READ_MS,
              );
            }),
          ]);
        } catch (error) {
          for (const gauge of collector.gauges) gauge.reset();
          this.scrapeReadFailures.inc({ collector: name });
          this.logger.warn(`metrics not read: collector=${name} ${(error as Error).message}`);
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return this.registry.metrics();
  }

  /**
   * A purchase answer: the Prometheus counter, and the goods' per-second tally (not for goods
   * that do not exist: made-up ids would each become a key in Redis).
   */
  countPurchase(goodsId: number, outcome: string, mode: PurchaseMode = 'redis'): void {
    this.purchases.inc({ outcome, mode });
    if (outcome !== 'GOODS_NOT_FOUND') this.purchaseTally.add(goodsId, outcome);
  }
}
