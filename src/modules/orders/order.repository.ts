import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Raw, Repository } from 'typeorm';
import {
  OrderEntity,
  STOCK_RETURNED,
  type OrderStatus,
} from '../../infra/database/entities/order.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';
import {
  ReplicaReadsService,
  type ReplicaRead,
} from '../../infra/database/replica-reads.service.js';

/** An order row to write, PENDING_PAYMENT. */
export interface PendingOrder {
  orderNo: string;
  requestId: string;
  userId: number;
  goodsId: number;
  quantity: number;
  /**
   * The payment deadline: a time, or this long after MySQL's NOW(3) (for an order whose sale
   * window MySQL's clock judged, so that one clock decides both).
   */
  expireAt: Date | { afterMs: number };
}

export type OrderOfGoods = Pick<
  OrderEntity,
  'requestId' | 'userId' | 'quantity' | 'orderNo' | 'status'
>;

/**
 * What a cancel asks of the payment deadline: passed (an expiry) or nothing (the buyer's own).
 * Judged by MySQL's clock in the UPDATE itself: one clock for every instance, whichever host
 * wrote `expire_at` or reads it.
 */
export type CancelDeadline = 'passed' | 'any';

const DEADLINE = {
  unpassed: ' AND expire_at > NOW(3)',
  passed: ' AND expire_at <= NOW(3)',
  any: '',
} as const;

/**
 * `seckill_order`. The state changes are conditional UPDATEs on status and version, whose
 * affected rows say who won a race; the unique keys (request_id, order_no, one active order per
 * buyer and goods) are what the writers rely on to refuse a second row.
 */
@Injectable()
export class OrderRepository {
  constructor(
    @InjectRepository(OrderEntity) private readonly orders: Repository<OrderEntity>,
    private readonly reads: ReplicaReadsService,
  ) {}

  findByOrderNo(orderNo: string): Promise<OrderEntity | null> {
    return this.orders.findOne({ where: { orderNo } });
  }

  /**
   * On the replica when caught up (see ReplicaReadsService); an order it does not hold yet is looked up
   * on the primary, so a lookup never says "not found" for want of replication.
   */
  findByOrderNoMayLag(orderNo: string): Promise<ReplicaRead<OrderEntity | null>> {
    return this.reads.read((db) => db.findOne(OrderEntity, { where: { orderNo } }), {
      onPrimaryToo: (order) => order === null,
    });
  }

  findByRequestId(requestId: string): Promise<OrderEntity | null> {
    return this.orders.findOne({ where: { requestId } });
  }

  /** Throws when the row is gone (orders are never deleted). */
  findByIdOrFail(orderId: number): Promise<OrderEntity> {
    return this.orders.findOneOrFail({ where: { id: orderId } });
  }

  latestForUser(goodsId: number, userId: number): Promise<OrderEntity | null> {
    return this.orders.findOne({ where: { goodsId, userId }, order: { id: 'DESC' } });
  }

  async hasAny(goodsId: number): Promise<boolean> {
    return (await this.orders.count({ where: { goodsId }, take: 1 })) > 0;
  }

  /** An unpaid order of the goods is left: its cancel or expiry may still give a unit back. */
  async hasUnpaid(goodsId: number): Promise<boolean> {
    return (
      (await this.orders.count({ where: { goodsId, status: 'PENDING_PAYMENT' }, take: 1 })) > 0
    );
  }

  /** By MySQL's clock, which stamped `updated_at` at the cancel. */
  recentlyCancelled(
    goodsId: number,
    withinMs: number,
    olderThanMs: number,
  ): Promise<{ orderNo: string; userId: number; quantity: number }[]> {
    return this.orders.find({
      select: { orderNo: true, userId: true, quantity: true },
      where: {
        goodsId,
        // A refund's order was cancelled first: its stock came back then, as a cancel's does.
        status: In(STOCK_RETURNED),
        updatedAt: Raw(
          (column) =>
            `${column} >= NOW(3) - INTERVAL :withinUs MICROSECOND AND ${column} <= NOW(3) - INTERVAL :olderThanUs MICROSECOND`,
          { withinUs: withinMs * 1_000, olderThanUs: olderThanMs * 1_000 },
        ),
      },
    });
  }

  /** Unpaid orders whose deadline passed more than `graceMs` ago by MySQL's clock, oldest first. */
  overdue(graceMs: number, limit: number): Promise<OrderEntity[]> {
    return this.orders.find({
      where: {
        status: 'PENDING_PAYMENT',
        expireAt: Raw((column) => `${column} < NOW(3) - INTERVAL :graceUs MICROSECOND`, {
          graceUs: graceMs * 1_000,
        }),
      },
      order: { expireAt: 'ASC' },
      take: limit,
    });
  }

  /** By MySQL's clock; 0 once the deadline has passed. */
  async msUntilDue(orderId: number): Promise<number> {
    const [row] = await this.orders.query<{ dueInUs: string | number | null }[]>(
      'SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), expire_at) AS dueInUs FROM seckill_order WHERE id = ?',
      [orderId],
    );
    return Math.max(0, Math.ceil(Number(row?.dueInUs ?? 0) / 1_000));
  }

  /** Paid only while pending at `version` and before its deadline. */
  payIfVersion(tx: Tx, orderId: number, version: number): Promise<boolean> {
    return this.leavePending(tx, orderId, version, 'PAID', DEADLINE.unpassed);
  }

  cancelIfVersion(
    tx: Tx,
    orderId: number,
    version: number,
    deadline: CancelDeadline,
  ): Promise<boolean> {
    return this.leavePending(tx, orderId, version, 'CANCELLED', DEADLINE[deadline]);
  }

  private async leavePending(
    tx: Tx,
    orderId: number,
    version: number,
    to: Exclude<OrderStatus, 'PENDING_PAYMENT'>,
    deadline: string,
  ): Promise<boolean> {
    const result = await tx.query<{ affectedRows: number }>(
      `UPDATE seckill_order SET status = ?, version = version + 1 WHERE id = ? AND status = 'PENDING_PAYMENT' AND version = ?${deadline}`,
      [to, orderId, version],
    );
    return result.affectedRows === 1;
  }

  /** Those of `requestIds` that have an order. */
  async existingRequestIds(tx: Tx, requestIds: string[]): Promise<Set<string>> {
    const rows = await tx.query<{ request_id: string }[]>(
      'SELECT request_id FROM seckill_order WHERE request_id IN (?)',
      [requestIds],
    );
    return new Set(rows.map((row) => row.request_id));
  }

  /**
   * A locking read (LOCK IN SHARE MODE, MySQL 8's and MariaDB's): it sees the latest committed
   * order of the request and waits for an uncommitted one (see VoidedRequestsService).
   */
  async hasOrderLocked(tx: Tx, requestId: string): Promise<boolean> {
    const rows = await tx.query<unknown[]>(
      'SELECT 1 FROM seckill_order WHERE request_id = ? LOCK IN SHARE MODE',
      [requestId],
    );
    return rows.length > 0;
  }

  /** A locking read (FOR UPDATE) of the order's row; null when there is none. */
  async lockById(tx: Tx, orderId: number): Promise<OrderEntity | null> {
    return tx.findOne(OrderEntity, { where: { id: orderId }, lock: { mode: 'pessimistic_write' } });
  }

  /** Whether the buyer holds an order of the goods other than `orderId` that holds stock. */
  async holdsAnother(tx: Tx, goodsId: number, userId: number, orderId: number): Promise<boolean> {
    const rows = await tx.query<unknown[]>(
      'SELECT 1 FROM seckill_order WHERE goods_id = ? AND user_id = ? AND active_key = 1 AND id <> ? LIMIT 1',
      [goodsId, userId, orderId],
    );
    return rows.length > 0;
  }

  /**
   * A cancelled order paid late leaves CANCELLED at `version`: PAID (its unit taken again) or
   * REFUND_REQUIRED (none left).
   */
  async settleLatePayment(
    tx: Tx,
    orderId: number,
    version: number,
    to: 'PAID' | 'REFUND_REQUIRED',
  ): Promise<boolean> {
    const result = await tx.query<{ affectedRows: number }>(
      `UPDATE seckill_order SET status = ?, version = version + 1 WHERE id = ? AND status = 'CANCELLED' AND version = ?`,
      [to, orderId, version],
    );
    return result.affectedRows === 1;
  }

  /**
   * Moves a pending order's deadline `graceMs` later, once (a payment under way); only before the
   * deadline has passed by MySQL's clock, and at `version`.
   */
  async extendDeadlineOnce(
    tx: Tx,
    orderId: number,
    version: number,
    graceMs: number,
  ): Promise<boolean> {
    const result = await tx.query<{ affectedRows: number }>(
      `UPDATE seckill_order SET expire_at = expire_at + INTERVAL ? MICROSECOND, payment_grace_at = NOW(3), version = version + 1
        WHERE id = ? AND status = 'PENDING_PAYMENT' AND version = ? AND payment_grace_at IS NULL AND expire_at > NOW(3)`,
      [graceMs * 1_000, orderId, version],
    );
    return result.affectedRows === 1;
  }

  /** One statement for all the rows: a duplicate key refuses them together. */
  async insertPending(tx: Tx, orders: PendingOrder[]): Promise<void> {
    if (orders.length === 0) return;
    const rows: string[] = [];
    const params: unknown[] = [];
    for (const { orderNo, requestId, userId, goodsId, quantity, expireAt } of orders) {
      const fixed = expireAt instanceof Date;
      rows.push(`(?, ?, ?, ?, ?, ?, ${fixed ? '?' : 'NOW(3) + INTERVAL ? MICROSECOND'})`);
      params.push(
        orderNo,
        requestId,
        userId,
        goodsId,
        quantity,
        'PENDING_PAYMENT',
        fixed ? expireAt : expireAt.afterMs * 1_000,
      );
    }
    await tx.query(
      `INSERT INTO seckill_order (order_no, request_id, user_id, goods_id, quantity, status, expire_at) VALUES ${rows.join(', ')}`,
      params,
    );
  }

  ofGoods(tx: Tx, goodsId: number): Promise<OrderOfGoods[]> {
    return tx.find(OrderEntity, {
      select: { requestId: true, userId: true, quantity: true, orderNo: true, status: true },
      where: { goodsId },
    });
  }

  async quantitiesByStatus(tx: Tx, goodsId: number): Promise<Record<OrderStatus, number>> {
    const rows = await tx.query<{ status: OrderStatus; quantity: string | number }[]>(
      'SELECT status, COALESCE(SUM(quantity), 0) AS quantity FROM seckill_order WHERE goods_id = ? GROUP BY status',
      [goodsId],
    );
    const quantities: Record<OrderStatus, number> = {
      PENDING_PAYMENT: 0,
      PAID: 0,
      CANCELLED: 0,
      REFUND_REQUIRED: 0,
    };
    for (const row of rows) quantities[row.status] = Number(row.quantity);
    return quantities;
  }
}
