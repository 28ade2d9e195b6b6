import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ReplicaReadsService } from '../../infra/database/replica-reads.service.js';

/** An event claimed for delivery. */
export interface ClaimedEvent {
  id: number;
  eventId: string;
  orderNo: string;
  type: string;
  body: string;
  attempts: number;
}

/** An event as the operator's list shows it. */
export interface MerchantEventView {
  eventId: string;
  orderNo: string;
  goodsId: number;
  type: string;
  attempts: number;
  createdAt: Date;
  parkedAt: Date | null;
  lastError: string | null;
}

export interface MerchantEventCounts {
  pending: number;
  delivered: number;
  parked: number;
}

type Row = Record<string, unknown>;

/**
 * The delivery side of `seckill_merchant_event` (written by MerchantOutboxRepository). An event is
 * due once its `next_attempt_at` has come, unless delivered, parked, or leased to a worker; only
 * the oldest undelivered event of each order is ever due, so that an order's events arrive in
 * order. A claim is a lease (token and time), so that workers share the outbox without a lock and
 * one that dies mid-delivery frees its events when the lease runs out.
 */
@Injectable()
export class MerchantEventRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly reads: ReplicaReadsService,
  ) {}

  async claimDue(token: string, leaseMs: number, limit: number): Promise<ClaimedEvent[]> {
    const due = await this.db.query<{ id: string | number }[]>(
      `SELECT e.id FROM seckill_merchant_event e
        WHERE e.delivered_at IS NULL AND e.parked_at IS NULL AND e.next_attempt_at <= NOW(3)
          AND (e.lease_until IS NULL OR e.lease_until < NOW(3))
          AND NOT EXISTS (
            SELECT 1 FROM seckill_merchant_event p
             WHERE p.order_no = e.order_no AND p.id < e.id AND p.delivered_at IS NULL)
        ORDER BY e.id LIMIT ?`,
      [limit],
    );
    if (due.length === 0) return [];
    await this.db.query(
      `UPDATE seckill_merchant_event SET lease_token = ?, lease_until = NOW(3) + INTERVAL ? MICROSECOND
        WHERE id IN (?) AND delivered_at IS NULL AND parked_at IS NULL
          AND (lease_until IS NULL OR lease_until < NOW(3))`,
      [token, leaseMs * 1_000, due.map((row) => Number(row.id))],
    );
    const rows = await this.db.query<Row[]>(
      `SELECT id, event_id, order_no, type, body, attempts FROM seckill_merchant_event
        WHERE lease_token = ? AND lease_until > NOW(3) AND delivered_at IS NULL ORDER BY id`,
      [token],
    );
    return rows.map((row) => ({
      id: Number(row.id),
      eventId: String(row.event_id),
      orderNo: String(row.order_no),
      type: String(row.type),
      body: String(row.body),
      attempts: Number(row.attempts),
    }));
  }

  /** False when the lease was lost (another worker delivers it too: at least once). */
  async markDelivered(id: number, token: string): Promise<boolean> {
    const result = await this.db.query<{ affectedRows: number }>(
      `UPDATE seckill_merchant_event SET delivered_at = NOW(3), attempts = attempts + 1, lease_token = NULL, lease_until = NULL, last_error = NULL
        WHERE id = ? AND lease_token = ?`,
      [id, token],
    );
    return result.affectedRows === 1;
  }

  /**
   * A failed attempt: tried again in `retryInMs`, or parked once it has been retried for
   * `retryForMs`. Returns whether it was parked.
   */
  async markFailed(
    id: number,
    token: string,
    error: string,
    retryInMs: number,
    retryForMs: number,
  ): Promise<'retry' | 'parked' | 'lost'> {
    const result = await this.db.query<{ affectedRows: number }>(
      `UPDATE seckill_merchant_event
          SET attempts = attempts + 1, last_error = ?, lease_token = NULL, lease_until = NULL,
              next_attempt_at = NOW(3) + INTERVAL ? MICROSECOND,
              parked_at = IF(retry_since <= NOW(3) - INTERVAL ? MICROSECOND, NOW(3), NULL)
        WHERE id = ? AND lease_token = ?`,
      [error.slice(0, 255), retryInMs * 1_000, retryForMs * 1_000, id, token],
    );
    if (result.affectedRows !== 1) return 'lost';
    const [row] = await this.db.query<Row[]>(
      'SELECT parked_at FROM seckill_merchant_event WHERE id = ?',
      [id],
    );
    return row?.parked_at ? 'parked' : 'retry';
  }

  /**
   * Parked events back to delivery, retried for another period: those of `eventIds`, or of the
   * goods, or all of them.
   */
  async retryParked(only: { eventIds?: string[]; goodsId?: number } = {}): Promise<number> {
    if (only.eventIds !== undefined && only.eventIds.length === 0) return 0;
    let where = 'parked_at IS NOT NULL';
    const params: unknown[] = [];
    if (only.eventIds) {
      where += ' AND event_id IN (?)';
      params.push(only.eventIds);
    }
    if (only.goodsId !== undefined) {
      where += ' AND goods_id = ?';
      params.push(only.goodsId);
    }
    const result = await this.db.query<{ affectedRows: number }>(
      `UPDATE seckill_merchant_event SET parked_at = NULL, next_attempt_at = NOW(3), retry_since = NOW(3) WHERE ${where}`,
      params,
    );
    return result.affectedRows;
  }

  /** Drops events delivered more than `olderThanMs` ago, at most `limit`; returns how many. */
  async pruneDelivered(olderThanMs: number, limit: number): Promise<number> {
    const result = await this.db.query<{ affectedRows: number }>(
      'DELETE FROM seckill_merchant_event WHERE delivered_at < NOW(3) - INTERVAL ? MICROSECOND LIMIT ?',
      [olderThanMs * 1_000, limit],
    );
    return result.affectedRows ?? 0;
  }

  async list(state: 'parked' | 'pending', limit: number): Promise<MerchantEventView[]> {
    const where =
      state === 'parked' ? 'parked_at IS NOT NULL' : 'delivered_at IS NULL AND parked_at IS NULL';
    const rows = await this.db.query<Row[]>(
      `SELECT event_id, order_no, goods_id, type, attempts, created_at, parked_at, last_error
         FROM seckill_merchant_event WHERE ${where} ORDER BY id LIMIT ?`,
      [limit],
    );
    return rows.map((row) => ({
      eventId: String(row.event_id),
      orderNo: String(row.order_no),
      goodsId: Number(row.goods_id),
      type: String(row.type),
      attempts: Number(row.attempts),
      createdAt: row.created_at as Date,
      parkedAt: (row.parked_at as Date | null) ?? null,
      lastError: (row.last_error as string | null) ?? null,
    }));
  }

  /** Per goods of `goodsIds`: events waiting, delivered, parked (for the dashboard: may lag). */
  async countsByGoods(goodsIds: number[]): Promise<Map<number, MerchantEventCounts>> {
    const counts = new Map<number, MerchantEventCounts>();
    if (goodsIds.length === 0) return counts;
    const rows = (
      await this.reads.read((db) =>
        db.query<Row[]>(
          `SELECT goods_id,
                  SUM(delivered_at IS NULL AND parked_at IS NULL) AS pending,
                  SUM(delivered_at IS NOT NULL) AS delivered,
                  SUM(parked_at IS NOT NULL) AS parked
             FROM seckill_merchant_event WHERE goods_id IN (?) GROUP BY goods_id`,
          [goodsIds],
        ),
      )
    ).value;
    for (const row of rows) {
      counts.set(Number(row.goods_id), {
        pending: Number(row.pending),
        delivered: Number(row.delivered),
        parked: Number(row.parked),
      });
    }
    return counts;
  }
}
