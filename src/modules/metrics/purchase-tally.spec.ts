import { describe, expect, it } from 'vitest';
import { PurchaseTally } from './purchase-tally.js';

const at = (second: number, ms = 0) => second * 1000 + ms;
const plain = (tally: PurchaseTally, now: number) =>
  tally.takeCompleted(now).map(({ second, counts }) => ({
    second,
    counts: Object.fromEntries(
      [...counts].map(([goodsId, byOutcome]) => [goodsId, Object.fromEntries(byOutcome)]),
    ),
  }));

describe('PurchaseTally', () => {
  it('should count answers per second, goods and outcome, and hand over only the seconds that are over', () => {
    const tally = new PurchaseTally();
    tally.add(7, 'ACCEPTED', at(100, 10));
    tally.add(7, 'ACCEPTED', at(100, 500));
    tally.add(7, 'SOLD_OUT', at(100, 900));
    tally.add(8, 'ACCEPTED', at(100, 999));
    tally.add(7, 'SOLD_OUT', at(101, 1));

    expect(plain(tally, at(101, 2))).toEqual([
      { second: 100, counts: { 7: { ACCEPTED: 2, SOLD_OUT: 1 }, 8: { ACCEPTED: 1 } } },
    ]);
    // Taken once: the same second is never handed over twice.
    expect(plain(tally, at(101, 3))).toEqual([]);
    expect(plain(tally, at(103))).toEqual([{ second: 101, counts: { 7: { SOLD_OUT: 1 } } }]);
  });

  it('should hand over nothing for seconds without answers', () => {
    const tally = new PurchaseTally();
    expect(tally.takeCompleted(at(50))).toEqual([]);
    tally.add(1, 'ACCEPTED', at(51));
    expect(plain(tally, at(60)).map((entry) => entry.second)).toEqual([51]);
  });

  it('should keep at most two minutes of seconds nobody took, dropping the oldest', () => {
    const tally = new PurchaseTally();
    for (let second = 0; second < 200; second++) tally.add(1, 'ACCEPTED', at(1_000 + second));
    const seconds = tally.takeCompleted(at(1_200)).map((entry) => entry.second);
    expect(seconds).toHaveLength(120);
    expect(seconds[0]).toBe(1_080);
    expect(seconds.at(-1)).toBe(1_199);
  });
});
