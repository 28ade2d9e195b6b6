import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';

/** One registry per app instance (tests run several in one process). */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly purchases = new Counter({
    name: 'seckill_purchases_total',
    help: 'Purchase attempts by outcome (ACCEPTED or the error code)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly orderMessages = new Counter({
    name: 'seckill_order_messages_total',
    help: 'Order messages consumed, by outcome (written, duplicate, rejected, voided, dead_lettered)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly publishes = new Counter({
    name: 'seckill_publishes_total',
    help: 'Order messages published, by result (confirmed, unconfirmed)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly versionConflicts = new Counter({
    name: 'seckill_version_conflicts_total',
    help: 'Optimistic-lock conflicts on the goods row (each cost a retry)',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
