import { Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error.js';
import { FaultInjectorService } from '../../config/fault-injector.service.js';
import type { OrderEntity, OrderStatus } from '../../infra/database/entities/order.entity.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrderRepository } from './order.repository.js';
import { OrderTransitionsService, type CancelReason } from './order-transitions.service.js';
import { OrdersService } from './orders.service.js';
import { RedisStockReturnService } from './redis-stock-return.service.js';

export type { CancelReason };
export type ExpireOutcome = 'cancelled' | 'already_cancelled' | 'paid' | 'not_found' | 'not_due';
/** An expiry's outcome; an order not due yet says in how long it is, by MySQL's clock. */
export type ExpireResult =
  { outcome: Exclude<ExpireOutcome, 'not_due'> } | { outcome: 'not_due'; dueInMs: number };

/**
 * The order state machine: PENDING_PAYMENT → PAID and PENDING_PAYMENT → CANCELLED here; a
 * payment that lands after the cancel moves CANCELLED → PAID or REFUND_REQUIRED
 * (OrderRetakeService). Each transition is one conditional UPDATE (status and version) whose affected-row count
 * says who won a race, so pay and cancel/expire racing on one order end in exactly one outcome,
 * and only the winner of a cancel gives stock back.
 */
@Injectable()
export class OrderLifecycleService {
  private readonly logger = new Logger(OrderLifecycleService.name);

  constructor(
    private readonly transitions: OrderTransitionsService,
    private readonly stockReturn: RedisStockReturnService,
    private readonly orders: OrderRepository,
    private readonly ordersByNo: OrdersService,
    private readonly metrics: MetricsService,
    private readonly faults: FaultInjectorService,
  ) {}

  async pay(orderNo: string, userId: number): Promise<{ orderNo: string; status: 'PAID' }> {
    let order = await this.findOwned(orderNo, userId);
    for (;;) {
      if (order.status === 'PAID') return { orderNo, status: 'PAID' };
      if (order.status === 'CANCELLED' || order.status === 'REFUND_REQUIRED') {
        throw new DomainError('ORDER_CANCELLED', 'This order was cancelled and cannot be paid');
      }
      if (await this.transitions.run(order, 'PAID')) {
        this.logger.log(`order paid: order=${orderNo} user=${userId} goods=${order.goodsId}`);
        this.metrics.orderTransitions.inc({ to: 'PAID' });
        return { orderNo, status: 'PAID' };
      }
      const current = await this.transitions.reload(order);
      if (current.version === order.version) {
        // Unchanged, so the deadline refused it: past it the order is cancelled, even if its
        // timeout message is late.
        const final = await this.cancel(current, 'EXPIRED');
        if (final === 'PAID') return { orderNo, status: 'PAID' };
        if (final === 'CANCELLED') {
          throw new DomainError('ORDER_CANCELLED', 'The payment deadline has passed');
        }
      }
      order = current;
    }
  }

  async cancelByOwner(
    orderNo: string,
    userId: number,
  ): Promise<{ orderNo: string; status: 'CANCELLED' }> {
    const order = await this.findOwned(orderNo, userId);
    const final = await this.cancel(order, 'USER');
    if (final === 'PAID') {
      throw new DomainError('ORDER_PAID', 'This order is paid and cannot be cancelled');
    }
    if (final === 'REFUND_REQUIRED') {
      throw new DomainError(
        'ORDER_PAID',
        'This order was paid after its cancel; its refund is due',
      );
    }
    return { orderNo, status: 'CANCELLED' };
  }

  /**
   * The payment timeout fired for this order. Idempotent. Whether it is due is MySQL's call (the
   * cancel's UPDATE); one not due yet says in how long it is.
   */
  async expire(orderNo: string): Promise<ExpireResult> {
    const order = await this.orders.findByOrderNo(orderNo);
    if (!order) return { outcome: 'not_found' };
    if (order.status === 'PAID') return { outcome: 'paid' };
    const wasPending = order.status === 'PENDING_PAYMENT';
    const final = await this.cancel(order, 'EXPIRED', true);
    if (final === 'PAID') return { outcome: 'paid' };
    if (final === 'PENDING_PAYMENT') {
      return { outcome: 'not_due', dueInMs: await this.orders.msUntilDue(order.id) };
    }
    return { outcome: wasPending ? 'cancelled' : 'already_cancelled' };
  }

  /**
   * Cancels orders whose deadline passed more than `graceMs` ago (by MySQL's clock): a backstop
   * for timeout messages that never arrived. Returns how many it cancelled.
   */
  async expireOverdue(graceMs: number, limit: number): Promise<number> {
    const overdue = await this.orders.overdue(graceMs, limit);
    let cancelled = 0;
    for (const order of overdue) {
      if ((await this.cancel(order, 'EXPIRED')) === 'CANCELLED') cancelled++;
    }
    if (cancelled > 0) this.logger.warn(`expired ${cancelled} overdue orders by sweep`);
    return cancelled;
  }

  /**
   * Runs the cancel transition unless the order is already settled; returns the status it ends
   * in. MySQL's stock comes back in the same transaction as the status change; Redis's after
   * the commit, idempotently by order number, so calling this again for a cancelled order
   * finishes a stock return that a crash interrupted. With `strict`, a failed Redis step throws
   * (the timeout consumer then retries); otherwise it is logged for the reconciler. An expiry
   * of an order whose deadline MySQL's clock has not reached changes nothing: PENDING_PAYMENT.
   */
  private async cancel(
    order: OrderEntity,
    reason: CancelReason,
    strict = false,
  ): Promise<OrderStatus> {
    let current = order;
    while (current.status === 'PENDING_PAYMENT') {
      if (await this.transitions.run(current, reason)) {
        current = { ...current, status: 'CANCELLED' };
        this.logger.log(
          `order cancelled: order=${current.orderNo} user=${current.userId} goods=${current.goodsId} reason=${reason}`,
        );
        this.metrics.orderTransitions.inc({ to: 'CANCELLED' });
        this.faults.crashPoint('after-cancel-commit');
        break;
      }
      const reloaded = await this.transitions.reload(current);
      // Unchanged, so the deadline refused it (only an expiry has one): not due yet.
      if (reloaded.version === current.version) return reloaded.status;
      current = reloaded;
    }
    if (current.status === 'CANCELLED') await this.stockReturn.giveBack(current, strict);
    return current.status;
  }

  private async findOwned(orderNo: string, userId: number): Promise<OrderEntity> {
    const order = await this.ordersByNo.byOrderNo(orderNo);
    if (order.userId !== userId) {
      throw new DomainError('FORBIDDEN', 'This order belongs to another user');
    }
    return order;
  }
}
