import { configNamespace } from './config-namespace.js';
import { readInt } from './env-readers.js';

/**
 * When an instance sheds new purchases (503 OVERLOADED, Retry-After) rather than queue them:
 * each bound is the instance's own measure, and 0 turns that one off.
 */
export interface OverloadConfig {
  /** Purchases in progress at once on this instance (from the request to its answer). */
  maxInFlight: number;
  /** How late the event loop runs a timer, in ms: past it every callback waits this long. */
  maxEventLoopDelayMs: number;
  /** How long the oldest purchase still waiting for the broker's confirm has waited, in ms. */
  maxConfirmWaitMs: number;
  /** The Retry-After of a shed purchase, in seconds. */
  retryAfterSeconds: number;
}

export const overloadConfig = configNamespace('overload', (env): OverloadConfig => ({
  maxInFlight: readInt(env, 'OVERLOAD_MAX_IN_FLIGHT', 1_024, 0, 100_000),
  maxEventLoopDelayMs: readInt(env, 'OVERLOAD_MAX_EVENT_LOOP_DELAY_MS', 0, 0, 60_000),
  maxConfirmWaitMs: readInt(env, 'OVERLOAD_MAX_CONFIRM_WAIT_MS', 1_000, 0, 600_000),
  retryAfterSeconds: readInt(env, 'OVERLOAD_RETRY_AFTER_SECONDS', 1, 1, 3_600),
}));
