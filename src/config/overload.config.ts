import { configNamespace } from './config-namespace.js';
import { readInt, type Env } from './env-readers.js';

/**
 * When an instance sheds new purchases (503 OVERLOADED, Retry-After) rather than queue them:
 * each bound is the instance's own measure, and 0 turns that one off.
 */
export interface OverloadConfig {
  /**
   * Purchases in progress at once on this instance (from the request to its answer); with a
   * latency target, the most the measured bound may reach.
   */
  maxInFlight: number;
  /**
   * The p99 the purchases taken should keep, in ms: the in-flight bound is then measured each
   * second (lowered while the taken purchases' p99 is past it, raised while it holds and the
   * bound turns purchases away); 0 keeps the bound at maxInFlight.
   */
  latencyTargetMs: number;
  /** How late the event loop runs a timer, in ms: past it every callback waits this long. */
  maxEventLoopDelayMs: number;
  /** How long the oldest purchase still waiting for the broker's confirm has waited, in ms. */
  maxConfirmWaitMs: number;
  /** The Retry-After of a shed purchase, in seconds, while few are shed: drawn from it to twice it. */
  retryAfterSeconds: number;
  /** The longest Retry-After the pace of the shed answers may set, in seconds. */
  retryAfterMaxSeconds: number;
  /**
   * The shed buyers' returns per second the Retry-After aims at, as a share of the purchases
   * taken per second (0.1 for 10 %); 0: the Retry-After stays at retryAfterSeconds to twice it.
   */
  retryShare: number;
}

export const overloadConfig = configNamespace('overload', (env): OverloadConfig => ({
  maxInFlight: readInt(env, 'OVERLOAD_MAX_IN_FLIGHT', 1_024, 0, 100_000),
  latencyTargetMs: readInt(env, 'OVERLOAD_LATENCY_TARGET_MS', 0, 0, 60_000),
  maxEventLoopDelayMs: readInt(env, 'OVERLOAD_MAX_EVENT_LOOP_DELAY_MS', 0, 0, 60_000),
  maxConfirmWaitMs: readInt(env, 'OVERLOAD_MAX_CONFIRM_WAIT_MS', 1_000, 0, 600_000),
  ...retryAfter(env),
}));

function retryAfter(env: Env) {
  const retryAfterSeconds = readInt(env, 'OVERLOAD_RETRY_AFTER_SECONDS', 1, 1, 3_600);
  // At least twice the base: the base's own draw reaches that far.
  const least = 2 * retryAfterSeconds;
  return {
    retryAfterSeconds,
    retryAfterMaxSeconds: readInt(
      env,
      'OVERLOAD_RETRY_AFTER_MAX_SECONDS',
      Math.max(30, least),
      least,
      7_200,
    ),
    retryShare: readInt(env, 'OVERLOAD_RETRY_SHARE_PERCENT', 10, 0, 100) / 100,
  };
}
