import type { ThrottleVerdict } from './throttle.scripts.js';
import type { RateLimitBudget } from './rate-limit.policy.js';

interface Count {
  hits: number;
  windowEnd: number;
  blockEnd: number;
}

/** How often trackers whose window and block are over are dropped. */
const SWEEP_EVERY_MS = 1_000;

/**
 * The budgets of lua/throttle-hits.lua, counted in this instance's memory, with the same verdicts
 * (fixed windows, the first refusal ends the walk, a blocked tracker's hits are not counted, the
 * hit over a limit starts its block). It stands in while Redis cannot count: the limits then hold
 * per instance (N instances let N times a budget through) instead of not at all, so that one
 * account or address cannot take the MySQL fallback, or the MySQL reads, for itself.
 */
export class LocalThrottle {
  private readonly counts = new Map<string, Count>();
  private sweptAt = 0;

  hit(budgets: readonly RateLimitBudget[], now = Date.now()): ThrottleVerdict {
    this.sweep(now);
    let last: Count | undefined;
    for (const [index, budget] of budgets.entries()) {
      const key = `${budget.throttler}\u0000${budget.tracker}`;
      let count = this.counts.get(key);
      if (count && count.blockEnd > now) {
        return verdict(index, count.blockEnd - now, count, now);
      }
      if (!count || count.windowEnd <= now) {
        count = { hits: 0, windowEnd: now + budget.ttl, blockEnd: 0 };
        this.counts.set(key, count);
      }
      count.hits++;
      last = count;
      if (count.hits > budget.limit) {
        count.blockEnd = now + budget.blockDuration;
        return verdict(index, budget.blockDuration, count, now);
      }
    }
    return verdict(-1, 0, last, now);
  }

  /** Trackers counted now (what the map holds). */
  get size(): number {
    return this.counts.size;
  }

  private sweep(now: number): void {
    if (now - this.sweptAt < SWEEP_EVERY_MS) return;
    this.sweptAt = now;
    for (const [key, count] of this.counts) {
      if (count.windowEnd <= now && count.blockEnd <= now) this.counts.delete(key);
    }
  }
}

function verdict(
  refused: number,
  msToBlockEnd: number,
  count: Count | undefined,
  now: number,
): ThrottleVerdict {
  const inWindow = count !== undefined && count.windowEnd > now;
  return {
    refused,
    msToBlockEnd,
    totalHits: inWindow ? count.hits : 0,
    msToWindowEnd: inWindow ? count.windowEnd - now : 0,
  };
}
