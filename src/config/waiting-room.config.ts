import { configNamespace } from './config-namespace.js';
import { readBool, readInt } from './env-readers.js';
import { readStreamBounds, type StreamBoundsConfig } from './seckill.config.js';

/** A `queue` sale's waiting room (modules/waiting-room/): how it admits. */
export interface WaitingRoomConfig {
  /** The working instances run the admissions (every open queue, each tick). */
  enabled: boolean;
  /** How often a working instance runs each open queue's admission. */
  tickMs: number;
  /**
   * Admitted buyers who have not bought yet stay within the remaining stock times this. With 1
   * every admitted buyer has a unit waiting for them; above 1 more are deciding at once than
   * there are units, so that those who walk away leave the stock idle for less time, but the
   * fastest of the admitted then win: a script's share of the sales may reach this many times
   * its share of the queue.
   */
  admitStockFactor: number;
  /**
   * Distinct accounts one client address (an IPv6 /64) may put into one sale's waiting room;
   * past it a join is refused 429. Counted with the joins, so that it outlives Redis.
   */
  maxAccountsPerAddress: number;
  /** GET …/queue/stream: its bounds (QUEUE_STREAM_MAX_PER_USER, …), as the result stream's. */
  stream: StreamBoundsConfig & {
    /** How often an instance reads each streamed queue's state, once for all its streams. */
    pollMs: number;
  };
}

export const waitingRoomConfig = configNamespace('waitingRoom', (env): WaitingRoomConfig => ({
  enabled: readBool(env, 'QUEUE_ADMISSION_ENABLED', true),
  tickMs: readInt(env, 'QUEUE_TICK_MS', 100, 10, 10_000),
  admitStockFactor: readInt(env, 'QUEUE_ADMIT_STOCK_FACTOR', 1, 1, 100),
  maxAccountsPerAddress: readInt(env, 'QUEUE_MAX_ACCOUNTS_PER_ADDRESS', 100, 1, 1_000_000),
  stream: {
    ...readStreamBounds(env, 'QUEUE_STREAM'),
    pollMs: readInt(env, 'QUEUE_STREAM_POLL_MS', 500, 50, 10_000),
  },
}));
