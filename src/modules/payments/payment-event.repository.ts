import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { OrderStatus } from '../../infra/database/entities/order.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';
import type { PaymentOutcome } from '../orders/order-payment.types.js';
import type { PaymentEventType } from './payment-event.js';
import { ReplicaReadsService } from '../../infra/database/replica-reads.service.js';

/** One provider event applied, with the answer it was given. */
export interface PaymentEventRow {
  eventId: string;
  type: PaymentEventType;
  orderNo: string;
  goodsId: number;
  outcome: PaymentOutcome;
  status: OrderStatus;
}

/** Late payments of one goods, by what became of them. */
export interface LatePaymentCounts {
  retaken: number;
  refundRequired: number;
}

/**
 * `seckill_payment_event`: the provider's events by id, each written in the transaction of the
 * change it made; its primary key refuses a second record of one event.
 */
@Injectable()
export class PaymentEventRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly reads: ReplicaReadsService,
  ) {}

  async find(eventId: string): Promise<PaymentEventRow | null> {
    const [row] = await this.db.query<
      {
        event_id: string;
        type: PaymentEventType;
        order_no: string;
        goods_id: string | number;
        outcome: PaymentOutcome;
        status: OrderStatus;
      }[]
    >(
      'SELECT event_id, type, order_no, goods_id, outcome, status FROM seckill_payment_event WHERE event_id = ?',
      [eventId],
    );
    return row
      ? {
          eventId: row.event_id,
          type: row.type,
          orderNo: row.order_no,
          goodsId: Number(row.goods_id),
          outcome: row.outcome,
          status: row.status,
        }
      : null;
  }

  /** Throws ER_DUP_ENTRY (on PRIMARY) when the event is recorded already. */
  async insert(tx: Tx, row: PaymentEventRow): Promise<void> {
    await tx.query(
      'INSERT INTO seckill_payment_event (event_id, type, order_no, goods_id, outcome, status) VALUES (?, ?, ?, ?, ?, ?)',
      [row.eventId, row.type, row.orderNo, row.goodsId, row.outcome, row.status],
    );
  }

  /** Per goods of `goodsIds`: its late payments taken again and refunded (dashboard: may lag). */
  async latePayments(goodsIds: number[]): Promise<Map<number, LatePaymentCounts>> {
    const counts = new Map<number, LatePaymentCounts>();
    if (goodsIds.length === 0) return counts;
    const rows = (
      await this.reads.read((db) =>
        db.query<{ goods_id: string | number; outcome: PaymentOutcome; events: string | number }[]>(
          `SELECT goods_id, outcome, COUNT(*) AS events FROM seckill_payment_event
            WHERE goods_id IN (?) AND outcome IN ('retaken', 'refund_required') GROUP BY goods_id, outcome`,
          [goodsIds],
        ),
      )
    ).value;
    for (const row of rows) {
      const goodsId = Number(row.goods_id);
      const entry = counts.get(goodsId) ?? { retaken: 0, refundRequired: 0 };
      if (row.outcome === 'retaken') entry.retaken = Number(row.events);
      else entry.refundRequired = Number(row.events);
      counts.set(goodsId, entry);
    }
    return counts;
  }
}
