import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Raw, Repository } from 'typeorm';
import { OrderEntity, type OrderStatus } from '../../infra/database/entities/order.entity.js';
import { DomainError, echoed } from '../../common/errors/domain-error.js';

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
  constructor(@InjectRepository(OrderEntity) private readonly orders: Repository<OrderEntity>) {}

  /** Only the owner or an admin sees an order; anyone else learns only that it is not theirs. */
  async getForViewer(orderNo: string, viewer: Viewer): Promise<OrderView> {
    const order = await this.byOrderNo(orderNo);
    if (!viewer.admin && order.userId !== viewer.userId) {
      throw new DomainError('FORBIDDEN', 'This order belongs to another user');
    }
    return toOrderView(order);
  }

  /** The order a client names by its number (a path segment, any text), or 404 ORDER_NOT_FOUND. */
  async byOrderNo(orderNo: string): Promise<OrderEntity> {
    const order = ORDER_NO_SHAPE.test(orderNo)
      ? await this.orders.findOne({ where: { orderNo } })
      : null;
    if (!order) throw new DomainError('ORDER_NOT_FOUND', `Order ${echoed(orderNo)} not found`);
    return order;
  }

  findByRequestId(requestId: string): Promise<OrderEntity | null> {
    return this.orders.findOne({ where: { requestId } });
  }

  /** The user's most recent order of this goods, whatever its status. */
  latestForUser(goodsId: number, userId: number): Promise<OrderEntity | null> {
    return this.orders.findOne({ where: { goodsId, userId }, order: { id: 'DESC' } });
  }

  /**
   * What a rebuilt Redis must know, read in one snapshot: the orders holding stock (not
   * cancelled), their buyers, and the cancelled orders' numbers (their stock is back already),
   * handed to `load`, which writes them to Redis before the snapshot's transaction ends. The
   * goods row stays locked until then: a cancel (or a database-mode sale) committing after the
   * snapshot waits for the load, so its Redis step finds the sale loaded instead of missing
   * (a restock then has nothing to give back to, and the load would count the order as active).
   * Closes the database fallback of the goods (fallback/): call it only to load Redis with it.
   */
  async history<T>(goodsId: number, load: (history: SaleHistory) => Promise<T>): Promise<T> {
    return this.orders.manager.transaction('REPEATABLE READ', async (manager) => {
      // A locking read, before any snapshot is taken: it waits for the database-mode purchases
      // holding the row (their UPDATE comes before their INSERT), and the orders read next see
      // them. Closing the fallback in the same transaction makes any later one find it closed:
      // nothing is sold in MySQL behind the rebuilt Redis's back.
      const [goods] = await manager.query<{ stock: number }[]>(
        'SELECT stock FROM seckill_goods WHERE id = ? FOR UPDATE',
        [goodsId],
      );
      await manager.query(
        'UPDATE seckill_goods SET fallback_open = 0, redis_stale = 0, fallback_held_at = NULL, rebuilt_at = NOW(3) WHERE id = ?',
        [goodsId],
      );
      const orders = await manager.find(OrderEntity, {
        select: { requestId: true, userId: true, quantity: true, orderNo: true, status: true },
        where: { goodsId },
      });
      const activeOrders = orders
        .filter((order) => order.status !== 'CANCELLED')
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
        stock: Number(goods?.stock ?? 0),
        activeOrders,
        buyers: [...buyers].map(([userId, quantity]) => ({ userId, quantity })),
        cancelledOrderNos: orders
          .filter((order) => order.status === 'CANCELLED')
          .map((order) => order.orderNo),
      });
    });
  }

  /**
   * Which rebuild of the goods into Redis was the last (history() stamps it): an opaque token,
   * only compared for equality, so no clock is read. null before the first rebuild.
   */
  async lastRebuild(goodsId: number): Promise<string | null> {
    const [row] = await this.orders.manager.query<{ rebuilt: string | null }[]>(
      "SELECT DATE_FORMAT(rebuilt_at, '%Y-%m-%d %H:%i:%s.%f') AS rebuilt FROM seckill_goods WHERE id = ?",
      [goodsId],
    );
    return row?.rebuilt ?? null;
  }

  async hasOrders(goodsId: number): Promise<boolean> {
    return (await this.orders.count({ where: { goodsId }, take: 1 })) > 0;
  }

  /**
   * Orders of the goods cancelled in the last `withinMs` (their Redis restock may lag), and at
   * least `olderThanMs` ago. By MySQL's clock, which stamped `updated_at` at the cancel.
   */
  async recentlyCancelled(
    goodsId: number,
    withinMs: number,
    olderThanMs = 0,
  ): Promise<{ orderNo: string; userId: number; quantity: number }[]> {
    return this.orders.find({
      select: { orderNo: true, userId: true, quantity: true },
      where: {
        goodsId,
        status: 'CANCELLED',
        updatedAt: Raw(
          (column) =>
            `${column} >= NOW(3) - INTERVAL :withinUs MICROSECOND AND ${column} <= NOW(3) - INTERVAL :olderThanUs MICROSECOND`,
          { withinUs: withinMs * 1_000, olderThanUs: olderThanMs * 1_000 },
        ),
      },
    });
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
    return this.orders.manager.transaction('REPEATABLE READ', async (manager) => {
      const [goods] = await manager.query<{ total_stock: number; stock: number }[]>(
        'SELECT total_stock, stock FROM seckill_goods WHERE id = ?',
        [goodsId],
      );
      if (!goods) return null;
      const rows = await manager.query<{ status: OrderStatus; quantity: string | number }[]>(
        'SELECT status, COALESCE(SUM(quantity), 0) AS quantity FROM seckill_order WHERE goods_id = ? GROUP BY status',
        [goodsId],
      );
      const quantities: Record<OrderStatus, number> = { PENDING_PAYMENT: 0, PAID: 0, CANCELLED: 0 };
      for (const row of rows) quantities[row.status] = Number(row.quantity);
      return { totalStock: Number(goods.total_stock), stock: Number(goods.stock), quantities };
    });
  }
}
