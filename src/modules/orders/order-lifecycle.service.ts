import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, LessThan, Repository } from 'typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter, isTransientDbError } from '../../common/database/transient-errors.js';
import { DomainError } from '../../common/errors/domain-error.js';
import { FaultInjector } from '../../config/fault-injector.js';
import { OrderEntity, type OrderStatus } from '../../infra/database/entities/order.entity.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { isDependencyFailure } from '../../common/errors/dependency-errors.js';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { RestockCode, StockService } from '../stock/stock.service.js';
import { OrderWriter } from './order-writer.service.js';
import { OrdersService } from './orders.service.js';

export type CancelReason = 'USER' | 'EXPIRED';
export type ExpireOutcome = 'cancelled' | 'already_cancelled' | 'paid' | 'not_found' | 'not_due';

const MAX_TRANSIENT_RETRIES = 10;

/** The payment deadline is judged with this much slack for clocks that disagree a little. */
const CLOCK_SKEW_MS = 1_000;

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
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(OrderEntity) private readonly orders: Repository<OrderEntity>,
    private readonly stock: StockService,
    private readonly metrics: MetricsService,
    private readonly faults: FaultInjector,
    private readonly writer: OrderWriter,
    private readonly ordersByNo: OrdersService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  async pay(orderNo: string, userId: number): Promise<{ orderNo: string; status: 'PAID' }> {
    let order = await this.findOwned(orderNo, userId);
    for (;;) {
      if (order.status === 'PAID') return { orderNo, status: 'PAID' };
      if (order.status === 'CANCELLED') {
        throw new DomainError('ORDER_CANCELLED', 'This order was cancelled and cannot be paid');
      }
      if (order.expireAt.getTime() <= Date.now()) {
        // Past the deadline the order is cancelled, even if its timeout message is late.
        if ((await this.cancel(order, 'EXPIRED')) === 'PAID') return { orderNo, status: 'PAID' };
        throw new DomainError('ORDER_CANCELLED', 'The payment deadline has passed');
      }
      if (await this.transition(order, 'PAID')) {
        this.logger.log(`order paid: order=${orderNo} user=${userId} goods=${order.goodsId}`);
        this.metrics.orderTransitions.inc({ to: 'PAID' });
        return { orderNo, status: 'PAID' };
      }
      order = await this.reload(order);
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

  /** The payment timeout fired for this order. Idempotent. */
  async expire(orderNo: string): Promise<ExpireOutcome> {
    const order = await this.orders.findOne({ where: { orderNo } });
    if (!order) return 'not_found';
    if (order.status === 'PAID') return 'paid';
    if (
      order.status === 'PENDING_PAYMENT' &&
      order.expireAt.getTime() > Date.now() + CLOCK_SKEW_MS
    ) {
      return 'not_due';
    }
    const wasPending = order.status === 'PENDING_PAYMENT';
    const final = await this.cancel(order, 'EXPIRED', true);
    if (final === 'PAID') return 'paid';
    return wasPending ? 'cancelled' : 'already_cancelled';
  }

  /**
   * Cancels orders whose deadline passed more than `graceMs` ago: a backstop for timeout
   * messages that never arrived. Returns how many it cancelled.
   */
  async expireOverdue(graceMs: number, limit: number): Promise<number> {
    const overdue = await this.orders.find({
      where: { status: 'PENDING_PAYMENT', expireAt: LessThan(new Date(Date.now() - graceMs)) },
      order: { expireAt: 'ASC' },
      take: limit,
    });
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
   * (the timeout consumer then retries); otherwise it is logged for the reconciler.
   */
  private async cancel(order: OrderEntity, reason: CancelReason, strict = false) {
    let current = order;
    while (current.status === 'PENDING_PAYMENT') {
      if (await this.transition(current, 'CANCELLED')) {
        current = { ...current, status: 'CANCELLED' };
        this.logger.log(
          `order cancelled: order=${current.orderNo} user=${current.userId} goods=${current.goodsId} reason=${reason}`,
        );
        this.metrics.orderTransitions.inc({ to: 'CANCELLED' });
        this.faults.crashPoint('after-cancel-commit');
        break;
      }
      current = await this.reload(current);
    }
    if (current.status === 'CANCELLED') {
      await this.returnStockToRedis(current).catch(async (error: Error) => {
        this.logger.error(
          `redis stock return failed: order=${current.orderNo} goods=${current.goodsId} ${error.message}`,
        );
        // While Redis is down (REDIS_DOWN_MODE=database), the sale is rebuilt from MySQL before
        // Redis sells it again, and the rebuild counts this cancel: marking it is enough, and
        // the payment timeouts of the fallback's orders are not held up behind Redis.
        if (this.config.redisDownMode === 'database' && isDependencyFailure(error)) {
          await this.writer.markRedisStale(current.goodsId);
          return;
        }
        if (strict) throw error;
      });
    }
    return current.status;
  }

  private async returnStockToRedis(order: OrderEntity): Promise<void> {
    const code = await this.stock.restock(
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
  private async transition(
    order: OrderEntity,
    to: Exclude<OrderStatus, 'PENDING_PAYMENT'>,
  ): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.transitionOnce(order, to);
      } catch (error) {
        if (!isTransientDbError(error) || attempt >= MAX_TRANSIENT_RETRIES) throw error;
        await sleep(backoffWithJitter(attempt, 5, 200));
      }
    }
  }

  private transitionOnce(order: OrderEntity, to: Exclude<OrderStatus, 'PENDING_PAYMENT'>) {
    return this.dataSource.transaction(async (manager) => {
      const runner = manager.queryRunner!;
      const result = await runner.query(
        "UPDATE seckill_order SET status = ?, version = version + 1 WHERE id = ? AND status = 'PENDING_PAYMENT' AND version = ?",
        [to, order.id, order.version],
        true,
      );
      if (result.affected !== 1) return false;
      if (to === 'CANCELLED') {
        // Bumping the version makes a consumer batch that read the old stock retry.
        await runner.query(
          'UPDATE seckill_goods SET stock = stock + ?, version = version + 1 WHERE id = ?',
          [order.quantity, order.goodsId],
        );
      }
      return true;
    });
  }

  private async reload(order: OrderEntity): Promise<OrderEntity> {
    return this.orders.findOneOrFail({ where: { id: order.id } });
  }

  private async findOwned(orderNo: string, userId: number): Promise<OrderEntity> {
    const order = await this.ordersByNo.byOrderNo(orderNo);
    if (order.userId !== userId) {
      throw new DomainError('FORBIDDEN', 'This order belongs to another user');
    }
    return order;
  }
}
