import type { Delivery } from './delivery.js';
import type { ConsumerChannel } from './queue-consumer.js';

/**
 * One consumer session of the order barrier (messaging/redis-barrier.store.ts): the id it
 * beats under, the channel it consumes on, its deliveries numbered from 1, those not settled
 * yet, and the barriers it drains. Each delivery reports its settle to the session that received
 * it and to no other: a batch still holding an old channel's deliveries settles them late, after
 * a new session's numbers have started again from 1, and must not touch that session's set.
 *
 * A session that gives a delivery back to the queue (requeue) is retired: the message may now sit
 * behind a barrier already delivered, which the session's count cannot see, so it marks no
 * barrier drained from then on. The barriers that saw it restart once it is gone, as when a
 * channel closes; it beats until what it still holds is settled, so none is skipped meanwhile.
 */
export class ConsumerSession {
  private received = 0;
  private readonly unsettled = new Set<number>();
  /** Per barrier: the last delivery received before its fence, or drained already. */
  private readonly drains = new Map<string, number | 'drained'>();
  private gaveBack = false;

  constructor(
    readonly id: string,
    readonly channel: ConsumerChannel,
  ) {}

  /** The delivery numbered in this session, counted unsettled until it is settled. */
  receive(delivery: Delivery): Delivery {
    const seq = ++this.received;
    this.unsettled.add(seq);
    delivery.whenSettled((how) => {
      this.unsettled.delete(seq);
      if (how === 'requeue') this.gaveBack = true;
    });
    return delivery;
  }

  /** It gave a delivery back to the queue: it drains no barrier any more. */
  get retired(): boolean {
    return this.gaveBack;
  }

  /** Every delivery it received is settled. */
  get idle(): boolean {
    return this.unsettled.size === 0;
  }

  /** Where it stands with a barrier: not started, being drained, or drained. */
  drainOf(barrier: string): 'none' | 'draining' | 'drained' {
    const drain = this.drains.get(barrier);
    if (drain === undefined) return 'none';
    return drain === 'drained' ? 'drained' : 'draining';
  }

  /** Called once its channel's round trip is done: waits for every delivery received so far. */
  fence(barrier: string): void {
    if (!this.drains.has(barrier)) this.drains.set(barrier, this.received);
  }

  /** Every delivery received before the barrier's fence is settled for good by this session. */
  mayMarkDrained(barrier: string): boolean {
    const through = this.drains.get(barrier);
    if (through === undefined || through === 'drained' || this.gaveBack) return false;
    for (const seq of this.unsettled) if (seq <= through) return false;
    return true;
  }

  markedDrained(barrier: string): void {
    this.drains.set(barrier, 'drained');
  }

  /** Drops what it knows of barriers that are no longer open. */
  forget(closed: (barrier: string) => boolean): void {
    for (const barrier of this.drains.keys()) if (closed(barrier)) this.drains.delete(barrier);
  }
}
