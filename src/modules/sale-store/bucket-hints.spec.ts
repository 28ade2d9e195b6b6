import { describe, expect, it } from 'vitest';
import { bucketOrder } from '../../common/stock-buckets.js';
import { BucketHints } from './bucket-hints.js';

describe('BucketHints', () => {
  it('leaves out buckets hinted empty and counts them as skipped', () => {
    const hints = new BucketHints(1_000);
    const order = bucketOrder(7, 8);
    hints.markEmpty(1, order[0], 0);
    hints.markEmpty(1, order[3], 0);
    const { order: left, skipped } = hints.candidates(1, 7, 8, 10);
    expect(skipped).toBe(2);
    expect(left).toEqual(order.filter((_, i) => i !== 0 && i !== 3));
  });

  it('forgets a hint once it lapses', () => {
    const hints = new BucketHints(100);
    hints.markEmpty(1, 2, 0);
    expect(hints.isEmpty(1, 2, 50)).toBe(true);
    expect(hints.isEmpty(1, 2, 100)).toBe(false);
  });

  it('drops every hint of a goods when its stock comes back, not those of others', () => {
    const hints = new BucketHints(1_000);
    hints.markEmpty(1, 2, 0);
    hints.markEmpty(2, 2, 0);
    hints.clear(1);
    expect(hints.isEmpty(1, 2, 1)).toBe(false);
    expect(hints.isEmpty(2, 2, 1)).toBe(true);
  });

  it('keeps nothing when hints are off', () => {
    const hints = new BucketHints(0);
    hints.markEmpty(1, 2, 0);
    expect(hints.isEmpty(1, 2, 0)).toBe(false);
  });
});
