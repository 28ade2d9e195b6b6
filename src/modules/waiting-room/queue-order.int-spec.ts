import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueOrder } from './queue-order.js';

/** lua/lib/queue-order.lua, run on the real Redis by a driver of this spec's. */
const LIBRARY = readFileSync(
  fileURLToPath(new URL('../../../lua/lib/queue-order.lua', import.meta.url)),
  'utf8',
);

/**
 * ARGV: seed prefix, first seed number, seed count, n, k. For each seed `prefix:k` the places of
 * join indices 0 .. k-1, then (k = n) the join indices at places 0 .. n-1, all flattened.
 */
const DRIVER = `${LIBRARY}
local n, k = tonumber(ARGV[4]), tonumber(ARGV[5])
local out = {}
for s = tonumber(ARGV[2]), tonumber(ARGV[2]) + tonumber(ARGV[3]) - 1 do
  local order = queueOrder(ARGV[1] .. ':' .. s, n)
  for i = 0, k - 1 do out[#out + 1] = order.placeOf(i) end
  if k == n then
    for p = 0, n - 1 do out[#out + 1] = order.indexAt(p) end
  end
end
return out`;

/** The 99.9th percentile of the chi-square distribution with 23 degrees of freedom. */
const CHI_SQUARE_23_999 = 49.73;

describe("the waiting room's shuffle (lua/lib/queue-order.lua, real Redis)", () => {
  let redis: Redis;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
  });

  afterAll(async () => {
    await redis.quit();
  });

  /** Per seed: the places of join indices 0..n-1, and the join index at each place. */
  async function orders(prefix: string, from: number, count: number, n: number) {
    const flat = (await redis.eval(DRIVER, 0, prefix, from, count, n, n)) as number[];
    return Array.from({ length: count }, (_, s) => {
      const at = flat.slice(s * 2 * n, (s + 1) * 2 * n);
      return { places: at.slice(0, n), indices: at.slice(n) };
    });
  }

  /** Per seed: the places of the first `k` join indices of `n`. */
  async function firstPlaces(prefix: string, from: number, count: number, n: number, k: number) {
    const flat = (await redis.eval(DRIVER, 0, prefix, from, count, n, k)) as number[];
    return Array.from({ length: count }, (_, s) => flat.slice(s * k, (s + 1) * k));
  }

  it('should give every pre-queue of any size a one-to-one order whose inverse finds each buyer', async () => {
    const sizes = [
      ...Array.from({ length: 64 }, (_, i) => i + 1),
      100,
      255,
      256,
      257,
      1_025,
      4_097,
    ];
    for (const n of sizes) {
      const [{ places, indices }] = await orders(`bijection-${n}`, 0, 1, n);
      expect([...places].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
      for (let i = 0; i < n; i++) expect(indices[places[i]]).toBe(i);
    }
  });

  it('should depend on the seed: two seeds order 1,000 buyers differently', async () => {
    const [a] = await orders('seed-a', 0, 1, 1_000);
    const [b] = await orders('seed-b', 0, 1, 1_000);
    const [again] = await orders('seed-a', 0, 1, 1_000);
    expect(again.places).toEqual(a.places);
    const same = a.places.filter((place, i) => place === b.places[i]).length;
    // A uniform pair of orders shares about one place.
    expect(same).toBeLessThan(10);
  });

  it('should draw each of the 24 orders of four buyers about equally often over 12,000 seeds', async () => {
    const counts = new Map<string, number>();
    for (let from = 0; from < 12_000; from += 2_000) {
      for (const { places } of await orders('uniform', from, 2_000, 4)) {
        const key = places.join(',');
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    expect(counts.size).toBe(24);
    const expected = 12_000 / 24;
    const chiSquare = [...counts.values()].reduce(
      (sum, c) => sum + (c - expected) ** 2 / expected,
      0,
    );
    // The seeds are fixed, so the figure is too: 20.9 with eight rounds; four rounds give 355
    // and six 46.5 on the same seeds.
    expect(chiSquare).toBeLessThan(CHI_SQUARE_23_999);
  });

  it('should give the first joiner of 1,000 an even chance against the second, and a tenth of the first hundred places', async () => {
    let firstAhead = 0;
    let firstInTopTenth = 0;
    const seeds = 10_000;
    for (let from = 0; from < seeds; from += 1_000) {
      for (const places of await firstPlaces('pairs', from, 1_000, 1_000, 2)) {
        if (places[0] < places[1]) firstAhead++;
        if (places[0] < 100) firstInTopTenth++;
      }
    }
    // Binomial(10,000, 1/2): sd 50; Binomial(10,000, 1/10): sd 30.
    expect(Math.abs(firstAhead - seeds / 2)).toBeLessThan(4 * 50);
    expect(Math.abs(firstInTopTenth - seeds / 10)).toBeLessThan(4 * 30);
  });

  it("should be computed alike by Redis and by queueOrder (the verifier's): every place and its inverse", async () => {
    for (const n of [1, 2, 3, 5, 17, 64, 65, 100, 1_025, 4_097]) {
      const drawn = await orders(`alike-${n}`, 0, n > 1_000 ? 2 : 10, n);
      for (const [s, { places, indices }] of drawn.entries()) {
        const order = queueOrder(`alike-${n}:${s}`, n);
        expect(Array.from({ length: n }, (_, i) => order.placeOf(i))).toEqual(places);
        expect(Array.from({ length: n }, (_, p) => order.indexAt(p))).toEqual(indices);
      }
    }
    // A million buyers and a seed as the room draws it (hex): the first places alike.
    const seed = 'c0ffee00112233445566778899aabbcc';
    const flat = (await redis.eval(DRIVER, 0, seed, 0, 1, 1_000_000, 2_000)) as number[];
    const order = queueOrder(`${seed}:0`, 1_000_000);
    expect(Array.from({ length: 2_000 }, (_, i) => order.placeOf(i))).toEqual(flat);
  });
});
