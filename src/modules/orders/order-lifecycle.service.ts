import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter, isTransientDbError } from '../../common/database/transient-errors.js';
import { DomainError } from '../../common/errors/domain-error.js';
import { FaultInjector } from '../../config/fault-injector.js';
import { OrderEntity, type OrderStatus } from '../../infra/database/entities/order.entity.js';
import { Transactions } from '../../infra/database/transactions.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { PurchaseLedger, RestockCode } from '../sale-store/purchase-ledger.service.js';
import { OrderRepository } from './order.repository.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersService } from './orders.service.js';
import { RedisDownPolicy } from '../fallback/redis-down-policy.js';

export type CancelReason = 'USER' | 'EXPIRED';
export type ExpireOutcome = 'cancelled' | 'already_cancelled' | 'paid' | 'not_found' | 'not_due';
/** An expiry's outcome; an order not due yet says in how long it is, by MySQL's clock. */
export type ExpireResult =
  { outcome: Exclude<ExpireOutcome, 'not_due'> } | { outcome: 'not_due'; dueInMs: number };

const MAX_TRANSIENT_RETRIES = 10;

/** A payment must come before the deadline, an expiry after it (OrderRepository judges both). */
type Transition = 'PAID' | CancelReason;

/**
 * The order state machine: PENDING_PAYMENT → PAID and PENDING_PAYMENT → CANCELLED, nothing
 * else. Each transition is one conditional UPDATE (status and version) whose affected-row count
 * says who won a race, so pay and cancel/expire racing on one order end in exactly one outcome,
 * and only the winner of a cancel gives stock back.
 */
@Injectable()
export class OrderLifecycleService {
  private readonly logger = new Logger(OrderLifecycleService.name);

  constructor(
    private readonly transactions: Transactions,
    private readonly orders: OrderRepository,
    private readonly goods: GoodsRepository,
    private readonly ledger: PurchaseLedger,
    private readonly metrics: MetricsService,
    private readonly faults: FaultInjector,
    private readonly writer: OrderWriter,
    private readonly ordersByNo: OrdersService,
    private readonly policy: RedisDownPolicy,
  ) {}

  async pay(orderNo: string, userId: number): Promise<{ orderNo: string; status: 'PAID' }> {
    let order = await this.findOwned(orderNo, userId);
    for (;;) {
      if (order.status === 'PAID') return { orderNo, status: 'PAID' };
      if (order.status === 'CANCELLED') {
        throw new DomainError('ORDER_CANCELLED', 'This order was cancelled and cannot be paid');
      }
      if (await this.transition(order, 'PAID')) {
        this.logger.log(`order paid: order=${orderNo} user=${userId} goods=${order.goodsId}`);
        this.metrics.orderTransitions.inc({ to: 'PAID' });
        return { orderNo, status: 'PAID' };
      }
      const current = await this.reload(order);
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
    if ((await this.cancel(order, 'USER')) === 'PAID') {
      throw new DomainError('ORDER_PAID', 'This order is paid and cannot be cancelled');
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
      if (await this.transition(current, reason)) {
        current = { ...current, status: 'CANCELLED' };
        this.logger.log(
          `order cancelled: order=${current.orderNo} user=${current.userId} goods=${current.goodsId} reason=${reason}`,
        );
        this.metrics.orderTransitions.inc({ to: 'CANCELLED' });
        this.faults.crashPoint('after-cancel-commit');
        break;
      }
      const reloaded = await this.reload(current);
      // Unchanged, so the deadline refused it (only an expiry has one): not due yet.
      if (reloaded.version === current.version) return reloaded.status;
      current = reloaded;
    }
    if (current.status === 'CANCELLED') {
      await this.returnStockToRedis(current).catch(async (error: Error) => {
        this.logger.error(
          `redis stock return failed: order=${current.orderNo} goods=${current.goodsId} ${error.message}`,
        );
        // While Redis is down (REDIS_DOWN_MODE=database), the sale is rebuilt from MySQL before
        // Redis sells it again, and the rebuild counts this cancel: marking it is enough, and
        // the payment timeouts of the fallback's orders are not held up behind Redis.
        if (this.policy.goesOnWithoutRedis(error)) {
          await this.writer.markRedisStale(current.goodsId);
          return;
        }
        if (strict) throw error;
      });
    }
    return current.status;
  }

  private async returnStockToRedis(order: OrderEntity): Promise<void> {
    const code = await this.ledger.restock(
      order.goodsId,
      order.orderNo,
      order.userId,
      order.quantity,
    );
    if (code === RestockCode.Restocked) {
      this.logger.log(`stock returned to redis: order=${order.orderNo} goods=${order.goodsId}`);
    }
  }

  /**
   * One conditional UPDATE; for a cancel, MySQL's stock comes back in the same transaction.
   * A deadlock or lock timeout rolls the transaction back whole, so it is simply run again.
   */
  private async transition(order: OrderEntity, transition: Transition): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.transitionOnce(order, transition);
      } catch (error) {
        if (!isTransientDbError(error) || attempt >= MAX_TRANSIENT_RETRIES) throw error;
        await sleep(backoffWithJitter(attempt, 5, 200));
      }
    }
  }

  private transitionOnce(order: OrderEntity, transition: Transition): Promise<boolean> {
    return this.transactions.run(async (tx) => {
      if (transition === 'PAID') return this.orders.payIfVersion(tx, order.id, order.version);
      const deadline = transition === 'EXPIRED' ? 'passed' : 'any';
      if (!(await this.orders.cancelIfVersion(tx, order.id, order.version, deadline))) {
        return false;
      }
      await this.goods.returnStock(tx, order.goodsId, order.quantity);
      return true;
    });
  }

  private async reload(order: OrderEntity): Promise<OrderEntity> {
    return this.orders.findByIdOrFail(order.id);
  }

  private async findOwned(orderNo: string, userId: number): Promise<OrderEntity> {
    const order = await this.ordersByNo.byOrderNo(orderNo);
    if (order.userId !== userId) {
      throw new DomainError('FORBIDDEN', 'This order belongs to another user');
    }
    return order;
  }
}
