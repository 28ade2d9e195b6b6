// The shuffle of a queue sale's pre-queue, as lua/lib/queue-order.lua computes it (a keyed
// Feistel permutation of the join indices, walked in a cycle below n): the checker recomputes
// each buyer's place from the MySQL journal's seed, and judges the order the buyers were told
// against it. queue-order.spec.ts holds places the Lua computed on Redis.
import { createHash } from 'node:crypto';

const QUEUE_ORDER_ROUNDS = 8;

/** The place (0 .. n-1) of the pre-queue buyer of join index `index`, for `seed` and size `n`. */
export function queueOrder(seed: string, n: number): { placeOf(index: number): number } {
  let m = 1;
  while (m * m < n) m *= 2;
  // The first 52 bits of the hash: exact in a double, as in the Lua.
  const f = (round: number, half: number) =>
    parseInt(createHash('sha1').update(`${seed}:${round}:${half}`).digest('hex').slice(0, 13), 16) %
    m;
  const forward = (x: number) => {
    let l = Math.floor(x / m);
    let r = x % m;
    for (let round = 1; round <= QUEUE_ORDER_ROUNDS; round++) [l, r] = [r, (l + f(round, r)) % m];
    return l * m + r;
  };
  return {
    placeOf(index: number) {
      let x = index;
      do x = forward(x);
      while (x >= n);
      return x;
    },
  };
}
