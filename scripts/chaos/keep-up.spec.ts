import { describe, expect, it } from 'vitest';

import type { HistoryEntry } from './history.js';
import { KEEP_UP_BOUND_MS, lagsBehindPeers, OWN_FAULT_GRACE_MS } from './keep-up.js';
import type { FaultSpan } from './queue-checks.js';

let nextId = 1;

/** A purchase of goods 7 on `instance`, answered 20 ms after it was sent. */
function purchase(instance: string, sentMs: number, status: number, code?: string): HistoryEntry {
  return {
    id: nextId++,
    op: 'purchase',
    buyer: nextId,
    goodsId: 7,
    instance,
    sentMs,
    answeredMs: sentMs + 20,
    status,
    ...(code ? { code } : {}),
    outcome: status === 202 ? 'taken' : 'refused',
  };
}

/** `instance` asked every `everyMs` from `fromMs` to `toMs`, each answered as `answer` says. */
function asked(
  instance: string,
  fromMs: number,
  toMs: number,
  everyMs: number,
  answer: (ms: number) => [number, string?],
): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  for (let ms = fromMs; ms <= toMs; ms += everyMs)
    entries.push(purchase(instance, ms, ...answer(ms)));
  return entries;
}

const fault = (fields: Partial<FaultSpan> & Pick<FaultSpan, 'from' | 'to'>): FaultSpan => ({
  what: 'a fault',
  kind: 'proxy-cut',
  redisData: false,
  stopsClock: false,
  ...fields,
});

const sold = (): [number, string?] => [202];
/** api-1 answers 503 from 30 s to 70 s; api-2 sells all along. */
const stuckFrom30To70 = (ms: number): [number, string?] =>
  ms >= 30_000 && ms < 70_000 ? [503, 'REDIS_UNAVAILABLE'] : [202];

describe('lagsBehindPeers', () => {
  it('finds an instance that decides nothing for the bound while its peer decides throughout', () => {
    const history = [
      ...asked('api-1', 0, 100_000, 500, stuckFrom30To70),
      ...asked('api-2', 0, 100_000, 500, sold),
    ];
    const lags = lagsBehindPeers(history, []);
    expect(lags).toHaveLength(1);
    expect(lags[0]).toMatchObject({ instance: 'api-1', goodsId: 7, peer: 'api-2' });
    // The first window of the bound wholly in the stall, to the last one.
    expect(lags[0].fromMs).toBeGreaterThanOrEqual(30_000);
    expect(lags[0].fromMs).toBeLessThanOrEqual(31_000);
    expect(lags[0].toMs).toBeGreaterThanOrEqual(69_000);
    expect(lags[0].toMs).toBeLessThanOrEqual(70_000);
    expect(lags[0].lastAnswer).toMatch(/503 REDIS_UNAVAILABLE/);
  });

  it('lets a stall shorter than the bound pass, and one every instance shares', () => {
    const short = (ms: number): [number, string?] =>
      ms >= 30_000 && ms < 30_000 + KEEP_UP_BOUND_MS - 2_000 ? [503] : [202];
    expect(
      lagsBehindPeers(
        [...asked('api-1', 0, 100_000, 500, short), ...asked('api-2', 0, 100_000, 500, sold)],
        [],
      ),
    ).toEqual([]);
    expect(
      lagsBehindPeers(
        [
          ...asked('api-1', 0, 100_000, 500, stuckFrom30To70),
          ...asked('api-2', 0, 100_000, 500, stuckFrom30To70),
        ],
        [],
      ),
    ).toEqual([]);
  });

  it('excuses a fault on the instance itself or on all, and its grace, never one on a shared engine', () => {
    const history = [
      ...asked('api-1', 0, 100_000, 500, stuckFrom30To70),
      ...asked('api-2', 0, 100_000, 500, sold),
    ];
    const until = 70_000 - OWN_FAULT_GRACE_MS;
    expect(
      lagsBehindPeers(history, [fault({ from: 29_000, to: until, instance: 'api-1' })]),
    ).toEqual([]);
    expect(lagsBehindPeers(history, [fault({ from: 29_000, to: until, instance: 'all' })])).toEqual(
      [],
    );
    expect(
      lagsBehindPeers(history, [fault({ from: 29_000, to: until, instance: 'api-2' })]),
    ).toHaveLength(1);
    expect(
      lagsBehindPeers(history, [fault({ from: 29_000, to: 69_000, kind: 'redis-kill' })]),
    ).toHaveLength(1);
    // Over at 25 s: its grace ends at 45 s, the 25 s of the stall after it are not excused.
    expect(
      lagsBehindPeers(history, [fault({ from: 20_000, to: 25_000, instance: 'api-1' })]),
    ).toHaveLength(1);
  });

  it('counts a sold-out or not-admitted answer as deciding, a closed sale or no answer as not', () => {
    const refusals = (ms: number): [number, string?] =>
      ms % 1_000 === 0 ? [409, 'SOLD_OUT'] : [403, 'NOT_ADMITTED'];
    const closed = (ms: number): [number, string?] =>
      ms >= 30_000 && ms < 70_000
        ? ms % 1_000 === 0
          ? [409, 'NOT_PREHEATED']
          : [0, 'TIMEOUT']
        : [202];
    expect(
      lagsBehindPeers(
        [...asked('api-1', 0, 100_000, 500, refusals), ...asked('api-2', 0, 100_000, 500, sold)],
        [],
      ),
    ).toEqual([]);
    expect(
      lagsBehindPeers(
        [...asked('api-1', 0, 100_000, 500, closed), ...asked('api-2', 0, 100_000, 500, sold)],
        [],
      ),
    ).toHaveLength(1);
  });

  it('needs the peer deciding throughout and the instance asked meanwhile', () => {
    // The peer decides only every 8 s: not throughout, so the engine may be failing it too.
    const sparse = asked('api-2', 0, 100_000, 8_000, sold);
    expect(
      lagsBehindPeers([...asked('api-1', 0, 100_000, 500, stuckFrom30To70), ...sparse], []),
    ).toEqual([]);
    // api-1 not asked from 25 s to 75 s: nothing to judge it by.
    const gap = asked('api-1', 0, 100_000, 500, sold).filter(
      (entry) => entry.sentMs < 25_000 || entry.sentMs > 75_000,
    );
    expect(lagsBehindPeers([...gap, ...asked('api-2', 0, 100_000, 500, sold)], [])).toEqual([]);
  });
});
