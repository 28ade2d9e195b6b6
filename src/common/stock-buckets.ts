/**
 * Which stock bucket a buyer belongs to, and in which order a buyer whose home bucket is empty
 * asks the others (see PurchaseLedgerStore and StockLoansStore). Pure functions of the ids: every instance agrees without
 * asking anyone.
 */

/** The most buckets a goods may have (the contract's `stockShards` bound). */
export const MAX_STOCK_SHARDS = 64;

/** murmur3's 32-bit finaliser: sequential ids come out spread over every bucket. */
function mix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A 32-bit hash of a user id (a safe integer: its high bits count too). */
export function userHash(userId: number): number {
  const high = Math.floor(userId / 0x1_0000_0000);
  return mix32((userId >>> 0) ^ mix32(high + 0x9e3779b9));
}

/**
 * The buyer's home bucket: all of the buyer's bookkeeping for the goods lives there, so the
 * one-per-user rule, the outbox and voiding stay single-slot scripts.
 */
export function homeBucket(userId: number, shards: number): number {
  return shards <= 1 ? 0 : userHash(userId) % shards;
}

/**
 * The other buckets, in the order this buyer asks them for stock when the home bucket is empty:
 * from a buyer-dependent start, so that a crowd whose home buckets are empty spreads over the
 * rest instead of all queueing on the next one.
 */
export function bucketOrder(userId: number, shards: number): number[] {
  if (shards <= 1) return [];
  const home = homeBucket(userId, shards);
  const start = (mix32(userHash(userId) ^ 0x5bd1e995) % (shards - 1)) + 1;
  return Array.from(
    { length: shards - 1 },
    (_, i) => (home + ((start + i - 1) % (shards - 1)) + 1) % shards,
  );
}
