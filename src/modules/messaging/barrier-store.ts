/**
 * A registry of order barriers and of the consumer sessions that drain them (Redis's, and
 * MySQL's when purchases may go on without Redis): what an order consumer beats in and drains.
 * Which stores a consumer uses is bound once (ORDER_BARRIER_STORES, FallbackModule).
 */
export interface BarrierStore {
  /** Whether the barrier of this id is kept here (the ids of each store differ in length). */
  owns(id: string): boolean;
  /** A session's heartbeat; returns the sessions alive and the barriers open. */
  tick(options: { session: string }): Promise<{ consumers: string[]; open: string[] }>;
  isDelivered(id: string): Promise<boolean>;
  markDelivered(id: string): Promise<void>;
  markDrained(id: string, session: string): Promise<void>;
  /** Drops a stopping session now; without it, a session is gone once its beats lapse. */
  leave?(session: string): Promise<void>;
}

export const ORDER_BARRIER_STORES = Symbol('ORDER_BARRIER_STORES');
