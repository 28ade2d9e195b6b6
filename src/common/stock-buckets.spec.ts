import { describe, expect, it } from 'vitest';
import { bucketOrder, homeBucket } from './stock-buckets.js';

describe('stock buckets', () => {
  it('puts every buyer in bucket 0 of a goods with one bucket', () => {
    for (const userId of [1, 2, 999, 2 ** 40 + 7]) expect(homeBucket(userId, 1)).toBe(0);
    expect(bucketOrder(5, 1)).toEqual([]);
  });

  it('gives each user one home bucket within range, the same every time', () => {
    for (let userId = 1; userId < 500; userId++) {
      const home = homeBucket(userId, 8);
      expect(home).toBeGreaterThanOrEqual(0);
      expect(home).toBeLessThan(8);
      expect(homeBucket(userId, 8)).toBe(home);
    }
  });

  it('spreads sequential user ids evenly over the buckets', () => {
    const counts = new Array<number>(8).fill(0);
    for (let userId = 1; userId <= 8_000; userId++) counts[homeBucket(userId, 8)]++;
    for (const count of counts) {
      expect(count).toBeGreaterThan(850);
      expect(count).toBeLessThan(1_150);
    }
  });

  it('tells ids apart by their high bits too', () => {
    const homes = new Set<number>();
    for (let high = 1; high <= 64; high++) homes.add(homeBucket(high * 2 ** 32, 8));
    expect(homes.size).toBeGreaterThan(4);
  });

  it('orders every other bucket exactly once, never the home bucket', () => {
    for (let userId = 1; userId < 300; userId++) {
      for (const shards of [2, 3, 8, 64]) {
        const order = bucketOrder(userId, shards);
        expect(order).toHaveLength(shards - 1);
        expect(new Set(order).size).toBe(shards - 1);
        expect(order).not.toContain(homeBucket(userId, shards));
        for (const bucket of order) expect(bucket).toBeLessThan(shards);
      }
    }
  });

  it('starts buyers sharing a home bucket at different buckets', () => {
    const firsts = new Set<number>();
    for (let userId = 1; userId < 2_000; userId++) {
      if (homeBucket(userId, 8) === 3) firsts.add(bucketOrder(userId, 8)[0]);
    }
    expect(firsts.size).toBe(7);
  });
});
