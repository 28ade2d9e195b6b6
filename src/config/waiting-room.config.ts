import { configNamespace } from './config-namespace.js';
import { readBool, readInt } from './env-readers.js';

/** A `queue` sale's waiting room (modules/waiting-room/): how it admits. */
export interface WaitingRoomConfig {
  /** The working instances run the admissions (every open queue, each tick). */
  enabled: boolean;
  /** How often a working instance runs each open queue's admission. */
  tickMs: number;
  /**
   * Admitted buyers who have not bought yet stay within the remaining stock times this: with 2,
   * twice as many buyers as units may be deciding at once, so that those who walk away do not
   * leave the stock idle, while nobody is admitted to a sale already spoken for.
   */
  admitStockFactor: number;
  /** Pre-queue buyers put in their shuffled place per script call (Redis is held that long). */
  shuffleChunk: number;
}

export const waitingRoomConfig = configNamespace('waitingRoom', (env): WaitingRoomConfig => ({
  enabled: readBool(env, 'QUEUE_ADMISSION_ENABLED', true),
  tickMs: readInt(env, 'QUEUE_TICK_MS', 100, 10, 10_000),
  admitStockFactor: readInt(env, 'QUEUE_ADMIT_STOCK_FACTOR', 2, 1, 100),
  shuffleChunk: readInt(env, 'QUEUE_SHUFFLE_CHUNK', 5_000, 100, 100_000),
}));
