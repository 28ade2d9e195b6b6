import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { FallbackBarrierEntity } from '../../infra/database/entities/fallback-barrier.entity.js';

/**
 * The MySQL order barrier's rows (DatabaseBarrierService): `seckill_fallback_barrier`, the sessions that
 * drained each (`seckill_fallback_drain`), and the consumer sessions alive
 * (`seckill_consumer_beat`). Every time is MySQL's NOW(3), one clock for all instances.
 */
@Injectable()
export class FallbackBarrierRepository {
  constructor(
    @InjectRepository(FallbackBarrierEntity)
    private readonly barriers: Repository<FallbackBarrierEntity>,
  ) {}

  /** Returns when it opened: MySQL's clock, which the rebuild stamps `rebuilt_at` with too. */
  async insert(id: string, ttlMs: number): Promise<Date> {
    const [{ now }] = await this.barriers.query<{ now: Date }[]>('SELECT NOW(3) AS now');
    await this.barriers.query(
      'INSERT INTO seckill_fallback_barrier (id, opened_at, expires_at) VALUES (?, ?, ? + INTERVAL ? SECOND)',
      [id, now, now, ttlMs / 1000],
    );
    return now;
  }

  async delete(id: string): Promise<void> {
    await this.barriers.query('DELETE FROM seckill_fallback_barrier WHERE id = ?', [id]);
  }

  /** Whether a consumer received the barrier's message; null once it expired (or never was). */
  async deliveredIfLive(id: string): Promise<boolean | null> {
    const [row] = await this.barriers.query<{ delivered: number }[]>(
      'SELECT delivered_at IS NOT NULL AS delivered FROM seckill_fallback_barrier WHERE id = ? AND expires_at > NOW(3)',
      [id],
    );
    return row ? Number(row.delivered) === 1 : null;
  }

  /** Whether received, expired or not. */
  async isDelivered(id: string): Promise<boolean> {
    const [row] = await this.barriers.query<unknown[]>(
      'SELECT 1 FROM seckill_fallback_barrier WHERE id = ? AND delivered_at IS NOT NULL',
      [id],
    );
    return row !== undefined;
  }

  /** The first delivery's time stands. */
  async markDelivered(id: string): Promise<void> {
    await this.barriers.query(
      'UPDATE seckill_fallback_barrier SET delivered_at = NOW(3) WHERE id = ? AND delivered_at IS NULL',
      [id],
    );
  }

  async openIds(): Promise<string[]> {
    const rows = await this.barriers.query<{ id: string }[]>(
      'SELECT id FROM seckill_fallback_barrier WHERE expires_at > NOW(3)',
    );
    return rows.map((row) => row.id);
  }

  async drainedSessions(id: string): Promise<string[]> {
    const rows = await this.barriers.query<{ session: string }[]>(
      'SELECT session FROM seckill_fallback_drain WHERE barrier_id = ?',
      [id],
    );
    return rows.map((row) => row.session);
  }

  /** Only for a barrier that exists: one that expired is not brought back half-empty. */
  async markDrained(id: string, session: string): Promise<void> {
    await this.barriers.query(
      'INSERT IGNORE INTO seckill_fallback_drain (barrier_id, session) SELECT id, ? FROM seckill_fallback_barrier WHERE id = ?',
      [session, id],
    );
  }

  /** The session is alive for `ttlMs` more. */
  async beat(session: string, ttlMs: number): Promise<void> {
    await this.barriers.query(
      'INSERT INTO seckill_consumer_beat (session, expires_at) VALUES (?, NOW(3) + INTERVAL ? SECOND) ON DUPLICATE KEY UPDATE expires_at = NOW(3) + INTERVAL ? SECOND',
      [session, ttlMs / 1000, ttlMs / 1000],
    );
  }

  async liveSessions(): Promise<string[]> {
    const rows = await this.barriers.query<{ session: string }[]>(
      'SELECT session FROM seckill_consumer_beat WHERE expires_at > NOW(3)',
    );
    return rows.map((row) => row.session);
  }

  async removeSession(session: string): Promise<void> {
    await this.barriers.query('DELETE FROM seckill_consumer_beat WHERE session = ?', [session]);
  }

  /** Beats gone for an hour, and the expired barriers with their drains. */
  async prune(): Promise<void> {
    await this.barriers.query(
      'DELETE FROM seckill_consumer_beat WHERE expires_at < NOW(3) - INTERVAL 1 HOUR',
    );
    await this.barriers.query(
      'DELETE d FROM seckill_fallback_drain d JOIN seckill_fallback_barrier b ON b.id = d.barrier_id WHERE b.expires_at < NOW(3)',
    );
    await this.barriers.query('DELETE FROM seckill_fallback_barrier WHERE expires_at < NOW(3)');
  }
}
