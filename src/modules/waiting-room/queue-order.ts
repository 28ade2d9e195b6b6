import { createHash } from 'node:crypto';

/** The rounds of lua/lib/queue-order.lua's Feistel network: the same number, or another order. */
const QUEUE_ORDER_ROUNDS = 8;

/** A queue sale's shuffle of its pre-queue: join index to place, and place to join index. */
export interface QueueOrder {
  placeOf(index: number): number;
  indexAt(place: number): number;
}

/**
 * lua/lib/queue-order.lua in TypeScript, step for step: the permutation of the join indices
 * 0 .. n-1 that the seed draws (the header there says how and why). Redis computes every place
 * the buyers are told; this one lets anybody outside compute the same order from the seed (the
 * draw's verifier), so that the order does not depend on who computes it
 * (queue-order.int-spec.ts holds the two to the same places).
 */
export function queueOrder(seed: string, n: number): QueueOrder {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`a pre-queue of ${n} buyers`);
  let m = 1;
  while (m * m < n) m *= 2;
  const prefixes = Array.from(
    { length: QUEUE_ORDER_ROUNDS + 1 },
    (_, round) => `${seed}:${round}:`,
  );
  // The first 52 bits of SHA1 (13 hex digits) are exact in a double, as in Lua.
  const f = (round: number, half: number): number =>
    Number.parseInt(
      createHash('sha1')
        .update(prefixes[round] + String(half))
        .digest('hex')
        .slice(0, 13),
      16,
    ) % m;
  // Lua's % is floored: never negative for a positive m.
  const mod = (x: number): number => ((x % m) + m) % m;
  const forward = (x: number): number => {
    let l = Math.floor(x / m);
    let r = x % m;
    for (let round = 1; round <= QUEUE_ORDER_ROUNDS; round++) [l, r] = [r, mod(l + f(round, r))];
    return l * m + r;
  };
  const backward = (y: number): number => {
    let l = Math.floor(y / m);
    let r = y % m;
    for (let round = QUEUE_ORDER_ROUNDS; round >= 1; round--) [l, r] = [mod(r - f(round, l)), l];
    return l * m + r;
  };
  const walk = (step: (x: number) => number, x: number): number => {
    let at = step(x);
    while (at >= n) at = step(at);
    return at;
  };
  const within = (value: number, what: string): number => {
    if (!Number.isSafeInteger(value) || value < 0 || value >= n) {
      throw new RangeError(`${what} ${value} is not in 0..${n - 1}`);
    }
    return value;
  };
  return {
    placeOf: (index) => walk(forward, within(index, 'join index')),
    indexAt: (place) => walk(backward, within(place, 'place')),
  };
}
