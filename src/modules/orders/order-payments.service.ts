import { Injectable, Logger } from '@nestjs/common';
import { UnavailableError } from '../../common/errors/domain-error.js';
import type { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { TransactionsService } from '../../infra/database/transactions.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import type { PaymentResult, RecordPayment } from './order-payment.types.js';
import { OrderRetakeService } from './order-retake.service.js';
import { OrderTransitionsService } from './order-transitions.service.js';
import { OrderRepository } from './order.repository.js';

/** Races lost in a row before the event is answered 503 (the provider sends it again). */
const MAX_ROUNDS = 8;

/**
 * What the payment provider's events do to an order (docs/payments.md). Each change is one
 * conditional UPDATE (status and version) with the event's record in the same transaction, so a
 * race with the deadline, the buyer's cancel or the same event delivered twice ends in one
 * outcome; a lost race reads the order again and decides anew.
 */
@Injectable()
export class OrderPaymentsService {
  private readonly logger = new Logger(OrderPaymentsService.name);

  constructor(
    private readonly orders: OrderRepository,
    private readonly transitions: OrderTransitionsService,
    private readonly lifecycle: OrderLifecycleService,
    private readonly retake: OrderRetakeService,
    private readonly transactions: TransactionsService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * `payment.succeeded`: PAID before the deadline; past it (the order expires first, its stock
   * back) or once cancelled, a late payment (OrderRetakeService).
   */
  async succeeded(order: OrderEntity, record: RecordPayment): Promise<PaymentResult> {
    let current = order;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      switch (current.status) {
        case 'PAID':
        case 'REFUND_REQUIRED':
          return this.unchanged(current, record);
        case 'PENDING_PAYMENT': {
          const paid: PaymentResult = { status: 'PAID', outcome: 'paid' };
          if (await this.transitions.run(current, 'PAID', (tx) => record(tx, paid))) {
            this.logger.log(
              `order paid by the provider: order=${current.orderNo} user=${current.userId} goods=${current.goodsId}`,
            );
            this.metrics.orderTransitions.inc({ to: 'PAID' });
            return paid;
          }
          const reloaded = await this.transitions.reload(current);
          // Unchanged, so the deadline refused it: the order expires (its stock back in both
          // stores, as any expiry) and the payment is a late one.
          if (reloaded.version === current.version) await this.lifecycle.expire(current.orderNo);
          break;
        }
        case 'CANCELLED': {
          const settled = await this.retake.settle(current, record);
          if (settled) return settled;
          break;
        }
      }
      current = await this.transitions.reload(current);
    }
    throw new UnavailableError(`Order ${order.orderNo} kept changing; send the event again`);
  }

  /**
   * `payment.started`: the deadline moves by `graceMs`, once, while it has not passed; otherwise
   * nothing changes.
   */
  async started(
    order: OrderEntity,
    graceMs: number,
    record: RecordPayment,
  ): Promise<PaymentResult> {
    let current = order;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (
        current.status !== 'PENDING_PAYMENT' ||
        current.paymentGraceAt !== null ||
        graceMs === 0
      ) {
        return this.unchanged(current, record);
      }
      const extended: PaymentResult = { status: 'PENDING_PAYMENT', outcome: 'extended' };
      if (await this.transitions.extendDeadline(current, graceMs, (tx) => record(tx, extended))) {
        this.logger.log(
          `payment started, deadline extended: order=${current.orderNo} goods=${current.goodsId} graceMs=${graceMs}`,
        );
        return extended;
      }
      const reloaded = await this.transitions.reload(current);
      // Unchanged, so its deadline has passed: too late to extend.
      if (reloaded.version === current.version) return this.unchanged(reloaded, record);
      current = reloaded;
    }
    throw new UnavailableError(`Order ${order.orderNo} kept changing; send the event again`);
  }

  /** An event that changes nothing (`payment.failed`: the buyer may still pay), recorded. */
  async unchanged(order: OrderEntity, record: RecordPayment): Promise<PaymentResult> {
    const result: PaymentResult = { status: order.status, outcome: 'unchanged' };
    await this.transactions.run((tx) => record(tx, result));
    return result;
  }

  findByOrderNo(orderNo: string): Promise<OrderEntity | null> {
    return this.orders.findByOrderNo(orderNo);
  }
}
