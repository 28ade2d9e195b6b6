import { describe, expect, it } from 'vitest';

import { queueOrder } from './queue-order.js';

const places = (seed: string, n: number) =>
  Array.from({ length: n }, (_, index) => queueOrder(seed, n).placeOf(index));

describe('queueOrder', () => {
  // Each list was computed by lua/lib/queue-order.lua's placeOf on Redis (redis-cli --eval).
  it('gives every join index the place the Lua shuffle gives it', () => {
    expect(places('abc123', 7)).toEqual([5, 6, 0, 2, 1, 4, 3]);
    expect(places('f00dfeed', 20)).toEqual([
      14, 8, 16, 3, 9, 2, 6, 15, 4, 17, 19, 11, 10, 5, 1, 12, 7, 18, 13, 0,
    ]);
    expect(places('0123456789abcdef0123456789abcdef', 33)).toEqual([
      23, 29, 14, 11, 6, 28, 18, 17, 16, 31, 20, 7, 5, 2, 27, 26, 3, 10, 30, 22, 9, 0, 32, 12, 13,
      24, 19, 25, 4, 21, 1, 15, 8,
    ]);
  });

  it('is one-to-one, and another seed gives another order', () => {
    expect([...places('seed-a', 50)].sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i),
    );
    expect(places('seed-a', 50)).not.toEqual(places('seed-b', 50));
  });
});
