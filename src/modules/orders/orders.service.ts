import { Injectable } from '@nestjs/common';
import {
  holdsStock,
  type OrderEntity,
  type OrderStatus,
} from '../../infra/database/entities/order.entity.js';
import type { ReplicaRead } from '../../infra/database/replica-reads.service.js';
import { TransactionsService } from '../../infra/database/transactions.service.js';
import { DomainError, echoed } from '../../common/errors/domain-error.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { OrderRepository } from './order.repository.js';

/** Anything else cannot be an order number: answered 404 without a query. */
const ORDER_NO_SHAPE = /^[A-Za-z0-9]{1,32}$/;

export interface OrderView {
  orderNo: string;
  userId: number;
  goodsId: number;
  quantity: number;
  status: OrderEntity['status'];
  expireAt: string;
  createdAt: string;
}

/** A sale as MySQL has it in one snapshot, for a rebuild of its Redis copy. */
export interface SaleHistory {
  /** MySQL's remaining stock, in the same snapshot */
  stock: number;
  activeOrders: { requestId: string; userId: number; quantity: number; orderNo: string }[];
  buyers: { userId: number; quantity: number }[];
  cancelledOrderNos: string[];
}

export interface Viewer {
  userId: number;
  admin: boolean;
}

/** Only the owner or an admin sees an order; anyone else learns only that it is not theirs. */
function ownedBy(order: OrderEntity, viewer: Viewer): OrderEntity {
  if (!viewer.admin && order.userId !== viewer.userId) {
    throw new DomainError('FORBIDDEN', 'This order belongs to another user');
  }
  return order;
}

export function toOrderView(order: OrderEntity): OrderView {
  return {
    orderNo: order.orderNo,
    userId: order.userId,
    goodsId: order.goodsId,
    quantity: order.quantity,
    status: order.status,
    expireAt: order.expireAt.toISOString(),
    createdAt: order.createdAt.toISOString(),
  };
}

@Injectable()
export class OrdersService {
  constructor(
    private readonly transactions: TransactionsService,
    private readonly orders: OrderRepository,
    private readonly goods: GoodsRepository,
  ) {}

  /**
   * The order as its viewer may see it, read on the primary; `mayLag` (a client that takes an
   * answer that may lag: an order history, a status poll): on the replica when it is caught up.
   * Says where it was read.
   */
  async getForViewer(
    orderNo: string,
    viewer: Viewer,
    mayLag = false,
  ): Promise<ReplicaRead<OrderView>> {
    const read: ReplicaRead<OrderEntity | null> = !ORDER_NO_SHAPE.test(orderNo)
      ? { value: null, from: 'primary' }
      : mayLag
        ? await this.orders.findByOrderNoMayLag(orderNo)
        : { value: await this.orders.findByOrderNo(orderNo), from: 'primary' };
    if (!read.value) throw new DomainError('ORDER_NOT_FOUND', `Order ${echoed(orderNo)} not found`);
    return { value: toOrderView(ownedBy(read.value, viewer)), from: read.from };
  }

  /** The order a client names by its number (a path segment, any text), or 404 ORDER_NOT_FOUND. */
  async byOrderNo(orderNo: string): Promise<OrderEntity> {
    const order = ORDER_NO_SHAPE.test(orderNo) ? await this.orders.findByOrderNo(orderNo) : null;
    if (!order) throw new DomainError('ORDER_NOT_FOUND', `Order ${echoed(orderNo)} not found`);
    return order;
  }

  findByRequestId(requestId: string): Promise<OrderEntity | null> {
    return this.orders.findByRequestId(requestId);
  }

  /** The user's most recent order of this goods, whatever its status. */
  latestForUser(goodsId: number, userId: number): Promise<OrderEntity | null> {
    return this.orders.latestForUser(goodsId, userId);
  }

  /**
   * What a rebuilt Redis must know, read in one snapshot: the orders holding stock (not
   * cancelled nor refunded), their buyers, and the others' numbers (their stock is back already),
   * handed to `load`, which writes them to Redis before the snapshot's transaction ends. The
   * goods row stays locked until then: a cancel (or a database-mode sale) committing after the
   * snapshot waits for the load, so its Redis step finds the sale loaded instead of missing
   * (a restock then has nothing to give back to, and the load would count the order as active).
   * Closes the database fallback of the goods (src/modules/fallback/): call it only to load Redis with it.
   */
  async history<T>(goodsId: number, load: (history: SaleHistory) => Promise<T>): Promise<T> {
    return this.transactions.run(async (tx) => {
      // A locking read, before any snapshot is taken: it waits for the database-mode purchases
      // holding the row (their UPDATE comes before their INSERT), and the orders read next see
      // them. Closing the fallback in the same transaction makes any later one find it closed:
      // nothing is sold in MySQL behind the rebuilt Redis's back.
      const stock = await this.goods.lockStock(tx, goodsId);
      await this.goods.markRebuilt(tx, goodsId);
      const orders = await this.orders.ofGoods(tx, goodsId);
      const activeOrders = orders
        .filter((order) => holdsStock(order.status))
        .map(({ requestId, userId, quantity, orderNo }) => ({
          requestId,
          userId,
          quantity,
          orderNo,
        }));
      const buyers = new Map<number, number>();
      for (const order of activeOrders) {
        buyers.set(order.userId, (buyers.get(order.userId) ?? 0) + order.quantity);
      }
      return load({
        stock: stock ?? 0,
        activeOrders,
        buyers: [...buyers].map(([userId, quantity]) => ({ userId, quantity })),
        cancelledOrderNos: orders
          .filter((order) => !holdsStock(order.status))
          .map((order) => order.orderNo),
      });
    }, 'REPEATABLE READ');
  }

  /**
   * Which rebuild of the goods into Redis was the last (history() stamps it): an opaque token,
   * only compared for equality, so no clock is read. null before the first rebuild.
   */
  lastRebuild(goodsId: number): Promise<string | null> {
    return this.goods.lastRebuild(goodsId);
  }

  hasOrders(goodsId: number): Promise<boolean> {
    return this.orders.hasAny(goodsId);
  }

  /**
   * Orders of the goods cancelled in the last `withinMs` (their Redis restock may lag), and at
   * least `olderThanMs` ago. By MySQL's clock, which stamped `updated_at` at the cancel.
   */
  recentlyCancelled(
    goodsId: number,
    withinMs: number,
    olderThanMs = 0,
  ): Promise<{ orderNo: string; userId: number; quantity: number }[]> {
    return this.orders.recentlyCancelled(goodsId, withinMs, olderThanMs);
  }

  /**
   * The goods' MySQL side in one snapshot (a REPEATABLE READ transaction): its stock and the
   * ordered quantity by status, read together so that a cancel cannot land between them.
   */
  async ledger(goodsId: number): Promise<{
    totalStock: number;
    stock: number;
    quantities: Record<OrderStatus, number>;
  } | null> {
    return this.transactions.run(async (tx) => {
      const goods = await this.goods.stockTotals(tx, goodsId);
      if (!goods) return null;
      return { ...goods, quantities: await this.orders.quantitiesByStatus(tx, goodsId) };
    }, 'REPEATABLE READ');
  }
}
