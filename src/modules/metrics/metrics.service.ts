import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PurchaseTally } from './purchase-tally.js';

/** Seconds: 1 ms to 10 s, about three a decade. */
export const HTTP_DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Which store decided a purchase. */
export type PurchaseMode = 'redis' | 'database';

@Injectable()
export class MetricsService {
  /** One registry per app instance (tests run several in one process). */
  readonly registry = new Registry();

  /**
   * Every answer's duration. Buckets from 1 ms (a sold-out answer from memory) to 10 s (the
   * request timeout's order): a latency SLO's threshold falls on one of them.
   */
  readonly httpDuration = new Histogram({
    name: 'seckill_http_request_duration_seconds',
    help: "Time from a request's arrival to its answer, by method, route pattern (unmatched: no route) and status",
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_DURATION_BUCKETS,
    registers: [this.registry],
  });

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

  readonly saleStateLockBusy = new Counter({
    name: 'seckill_sale_state_lock_busy_total',
    help: "Wipes, loads and repairs of a sale's Redis keys put off because another path held the goods' sale-state lock",
    labelNames: ['path'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
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
