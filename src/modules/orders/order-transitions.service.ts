import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter, isTransientDbError } from '../../common/database/transient-errors.js';
import type { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { TransactionsService, type Tx } from '../../infra/database/transactions.service.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { MerchantOutboxRepository, type MerchantEventType } from './merchant-outbox.repository.js';
import { OrderRepository } from './order.repository.js';

const MAX_TRANSIENT_RETRIES = 10;

/** Why an order is cancelled: its owner asked, or its payment deadline passed. */
export type CancelReason = 'USER' | 'EXPIRED';

/** A payment must come before the deadline, an expiry after it (OrderRepository judges both). */
export type Transition = 'PAID' | CancelReason;

/** The merchant's event of each transition. */
const EVENT_OF: Record<Transition, MerchantEventType> = {
  PAID: 'order.paid',
  USER: 'order.cancelled',
  EXPIRED: 'order.expired',
};

/** The caller's own writes, in the transaction of the change (a payment event's record). */
export type AlongWith = (tx: Tx) => Promise<void>;

/**
 * An order's move out of PENDING_PAYMENT in MySQL: one conditional UPDATE on its status and
 * version (false: another transition won, or the deadline refused it), with a cancel's stock
 * back in the same transaction.
 */
@Injectable()
export class OrderTransitionsService {
  constructor(
    private readonly transactions: TransactionsService,
    private readonly orders: OrderRepository,
    private readonly goods: GoodsRepository,
    private readonly outbox: MerchantOutboxRepository,
  ) {}

  /**
   * One conditional UPDATE; for a cancel, MySQL's stock comes back in the same transaction.
   * A deadlock or lock timeout rolls the transaction back whole, so it is simply run again.
   * `alongWith` runs in the same transaction once the change is made; what it throws undoes it.
   */
  async run(order: OrderEntity, transition: Transition, alongWith?: AlongWith): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.transitionOnce(order, transition, alongWith);
      } catch (error) {
        if (!isTransientDbError(error) || attempt >= MAX_TRANSIENT_RETRIES) throw error;
        await sleep(backoffWithJitter(attempt, 5, 200));
      }
    }
  }

  private transitionOnce(
    order: OrderEntity,
    transition: Transition,
    alongWith?: AlongWith,
  ): Promise<boolean> {
    return this.transactions.run(async (tx) => {
      if (transition === 'PAID') {
        if (!(await this.orders.payIfVersion(tx, order.id, order.version))) return false;
      } else {
        const deadline = transition === 'EXPIRED' ? 'passed' : 'any';
        if (!(await this.orders.cancelIfVersion(tx, order.id, order.version, deadline))) {
          return false;
        }
        await this.goods.returnStock(tx, order.goodsId, order.quantity);
      }
      await this.outbox.append(tx, EVENT_OF[transition], [order]);
      await alongWith?.(tx);
      return true;
    });
  }

  /**
   * A payment under way moves the deadline `graceMs` later, once, before it has passed; false:
   * the order changed since `order` was read, was extended already, or is past its deadline.
   */
  async extendDeadline(
    order: OrderEntity,
    graceMs: number,
    alongWith: AlongWith,
  ): Promise<boolean> {
    return this.transactions.run(async (tx) => {
      if (!(await this.orders.extendDeadlineOnce(tx, order.id, order.version, graceMs))) {
        return false;
      }
      await alongWith(tx);
      return true;
    });
  }

  async reload(order: OrderEntity): Promise<OrderEntity> {
    return this.orders.findByIdOrFail(order.id);
  }
}
