import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { randomHex } from '../../common/random/random-hex.js';
import {
  judgeBarrier,
  type BarrierState,
  type OpenBarrier,
} from '../messaging/order-barrier.service.js';
import { OrderPublisher } from '../messaging/order-publisher.service.js';
import type { BarrierStore } from '../messaging/barrier-store.js';

/** A consumer beats every tick; its beat counts this long (longer than between two checks). */
const HEARTBEAT_TTL_MS = 3_000;
/** A barrier not passed by then is dropped (its opener starts another). */
const BARRIER_TTL_MS = 600_000;
/** Redis barriers' ids are 16 hex characters; these are 20, so a consumer tells them apart. */
const ID_BYTES = 10;

export function isDatabaseBarrier(id: string): boolean {
  return id.length === ID_BYTES * 2;
}

/**
 * The order barrier (messaging/order-barrier.service.ts, same protocol and proof) with its
 * consumer registry and marks in MySQL instead of Redis: the barrier that opens the Redis-down
 * fallback must pass while Redis is unreachable. Its message goes through the orders queue like
 * the other's. Consumers beat here only with REDIS_DOWN_MODE=database: a beat and a read of
 * the open barriers per consumer per tick (see CONSUMER_TICK_MS), the price of a registry that
 * is complete when Redis dies.
 */
@Injectable()
export class DatabaseBarrier implements BarrierStore {
  owns(id: string): boolean {
    return isDatabaseBarrier(id);
  }

  private readonly logger = new Logger(DatabaseBarrier.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly publisher: OrderPublisher,
  ) {}

  async open(): Promise<OpenBarrier> {
    const id = randomHex(ID_BYTES);
    // MySQL's clock, which the rebuild stamps `rebuilt_at` with (see FallbackGate).
    const [{ now }] = await this.db.query<{ now: Date }[]>('SELECT NOW(3) AS now');
    await this.db.query(
      'INSERT INTO seckill_fallback_barrier (id, opened_at, expires_at) VALUES (?, ?, ? + INTERVAL ? SECOND)',
      [id, now, now, BARRIER_TTL_MS / 1000],
    );
    let consumers: string[];
    try {
      ({ consumers } = await this.tick());
      if (!(await this.publisher.publishBarrier(id))) {
        throw new Error('the barrier message was not confirmed');
      }
    } catch (error) {
      // The opener starts another on its next try: this one must not stay open (consumers read
      // every open barrier each tick) until it expires.
      await this.db
        .query('DELETE FROM seckill_fallback_barrier WHERE id = ?', [id])
        .catch(() => undefined);
      throw error;
    }
    this.logger.log(`fallback barrier opened: id=${id} consumers=${consumers.length}`);
    return { id, openedAt: now.getTime(), seen: new Set(consumers) };
  }

  async check(barrier: OpenBarrier): Promise<BarrierState> {
    const [row] = await this.db.query<{ delivered: number }[]>(
      'SELECT delivered_at IS NOT NULL AS delivered FROM seckill_fallback_barrier WHERE id = ? AND expires_at > NOW(3)',
      [barrier.id],
    );
    if (!row) return 'restart';
    const drained = new Set(
      (
        await this.db.query<{ session: string }[]>(
          'SELECT session FROM seckill_fallback_drain WHERE barrier_id = ?',
          [barrier.id],
        )
      ).map((r) => r.session),
    );
    return judgeBarrier(
      barrier,
      { delivered: Number(row.delivered) === 1, drained: (session) => drained.has(session) },
      (await this.tick()).consumers,
      () => this.publisher.ordersConsumers(),
    );
  }

  /** A consumer session's heartbeat (or a read without one): who is alive, which barriers open. */
  async tick(options: { session?: string } = {}): Promise<{ consumers: string[]; open: string[] }> {
    if (options.session) {
      await this.db.query(
        'INSERT INTO seckill_consumer_beat (session, expires_at) VALUES (?, NOW(3) + INTERVAL ? SECOND) ON DUPLICATE KEY UPDATE expires_at = NOW(3) + INTERVAL ? SECOND',
        [options.session, HEARTBEAT_TTL_MS / 1000, HEARTBEAT_TTL_MS / 1000],
      );
    }
    const consumers = await this.db.query<{ session: string }[]>(
      'SELECT session FROM seckill_consumer_beat WHERE expires_at > NOW(3)',
    );
    const open = await this.db.query<{ id: string }[]>(
      'SELECT id FROM seckill_fallback_barrier WHERE expires_at > NOW(3)',
    );
    return { consumers: consumers.map((r) => r.session), open: open.map((r) => r.id) };
  }

  /** A consumer session that closed its channel: what it held is back in the queue. */
  async leave(session: string): Promise<void> {
    await this.db.query('DELETE FROM seckill_consumer_beat WHERE session = ?', [session]);
  }

  async isDelivered(id: string): Promise<boolean> {
    const [row] = await this.db.query<unknown[]>(
      'SELECT 1 FROM seckill_fallback_barrier WHERE id = ? AND delivered_at IS NOT NULL',
      [id],
    );
    return row !== undefined;
  }

  async markDelivered(id: string): Promise<void> {
    await this.db.query(
      'UPDATE seckill_fallback_barrier SET delivered_at = NOW(3) WHERE id = ? AND delivered_at IS NULL',
      [id],
    );
  }

  /** Only for a barrier that exists: one that expired is not brought back half-empty. */
  async markDrained(id: string, session: string): Promise<void> {
    await this.db.query(
      'INSERT IGNORE INTO seckill_fallback_drain (barrier_id, session) SELECT id, ? FROM seckill_fallback_barrier WHERE id = ?',
      [session, id],
    );
  }

  /** Rows of beats and barriers long gone; called now and then by the gate. */
  async prune(): Promise<void> {
    await this.db.query(
      'DELETE FROM seckill_consumer_beat WHERE expires_at < NOW(3) - INTERVAL 1 HOUR',
    );
    await this.db.query(
      'DELETE d FROM seckill_fallback_drain d JOIN seckill_fallback_barrier b ON b.id = d.barrier_id WHERE b.expires_at < NOW(3)',
    );
    await this.db.query('DELETE FROM seckill_fallback_barrier WHERE expires_at < NOW(3)');
  }
}
