import { Injectable, Logger } from '@nestjs/common';
import { randomHex } from '../../common/random/random-hex.js';
import {
  judgeBarrier,
  type BarrierState,
  type OpenBarrier,
} from '../messaging/redis-barrier.store.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import type { BarrierStore } from '../messaging/barrier-store.js';
import { FallbackBarrierRepository } from './fallback-barrier.repository.js';

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
 * The order barrier (messaging/redis-barrier.store.ts, same protocol and proof) with its
 * consumer registry and marks in MySQL instead of Redis: the barrier that opens the Redis-down
 * fallback must pass while Redis is unreachable. Its message goes through the orders queue like
 * the other's. Consumers beat here only with REDIS_DOWN_MODE=database: a beat and a read of
 * the open barriers per consumer per tick (see CONSUMER_TICK_MS), the price of a registry that
 * is complete when Redis dies.
 */
@Injectable()
export class DatabaseBarrierService implements BarrierStore {
  owns(id: string): boolean {
    return isDatabaseBarrier(id);
  }

  private readonly logger = new Logger(DatabaseBarrierService.name);

  constructor(
    private readonly rows: FallbackBarrierRepository,
    private readonly publisher: OrderPublisher,
  ) {}

  async open(): Promise<OpenBarrier> {
    const id = randomHex(ID_BYTES);
    // MySQL's clock, which the rebuild stamps `rebuilt_at` with (see FallbackGateService).
    const now = await this.rows.insert(id, BARRIER_TTL_MS);
    let consumers: string[];
    try {
      ({ consumers } = await this.tick());
      if (!(await this.publisher.publishBarrier(id))) {
        throw new Error('the barrier message was not confirmed');
      }
    } catch (error) {
      // The opener starts another on its next try: this one must not stay open (consumers read
      // every open barrier each tick) until it expires.
      await this.rows.delete(id).catch(() => undefined);
      throw error;
    }
    this.logger.log(`fallback barrier opened: id=${id} consumers=${consumers.length}`);
    return { id, openedAt: now.getTime(), seen: new Set(consumers) };
  }

  async check(barrier: OpenBarrier): Promise<BarrierState> {
    const delivered = await this.rows.deliveredIfLive(barrier.id);
    if (delivered === null) return 'restart';
    const drained = new Set(await this.rows.drainedSessions(barrier.id));
    return judgeBarrier(
      barrier,
      { delivered, drained: (session) => drained.has(session) },
      (await this.tick()).consumers,
      () => this.publisher.ordersConsumers(),
    );
  }

  /** A consumer session's heartbeat (or a read without one): who is alive, which barriers open. */
  async tick(options: { session?: string } = {}): Promise<{ consumers: string[]; open: string[] }> {
    if (options.session) await this.rows.beat(options.session, HEARTBEAT_TTL_MS);
    const consumers = await this.rows.liveSessions();
    const open = await this.rows.openIds();
    return { consumers, open };
  }

  /** A consumer session that closed its channel: what it held is back in the queue. */
  async leave(session: string): Promise<void> {
    await this.rows.removeSession(session);
  }

  isDelivered(id: string): Promise<boolean> {
    return this.rows.isDelivered(id);
  }

  markDelivered(id: string): Promise<void> {
    return this.rows.markDelivered(id);
  }

  markDrained(id: string, session: string): Promise<void> {
    return this.rows.markDrained(id, session);
  }

  /** Rows of beats and barriers long gone; called now and then by FallbackReturnService. */
  prune(): Promise<void> {
    return this.rows.prune();
  }
}
