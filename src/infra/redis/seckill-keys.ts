import { keySlot, type SlotScope } from './redis-client.js';
import { homeBucket } from '../../common/stock-buckets.js';

/**
 * Every Redis key of the service, in one place. A sale's keys share the `{goodsId}` hash tag so
 * that they live in one cluster slot and one Lua script may touch them all.
 */
export const SALES_INDEX_KEY = 'seckill:sales';

export function saleKeys(goodsId: number) {
  return keysUnder(`seckill:{${goodsId}}`);
}

/**
 * The keys of one stock bucket of a goods whose stock is split over `shards` buckets. One bucket
 * is the sale's own keys (`seckill:{42}:…`), unchanged; with more, each bucket has its own tag
 * (`seckill:{42.3}:…`) so that the buckets spread over a cluster's masters. A buyer's bookkeeping
 * (buyers, in flight, outbox, results, lock…) lives in the buyer's home bucket (stock-buckets.ts).
 * What belongs to the goods as a whole (verdict, rates, challenges, tokens, and the bucket count
 * in the field `shards` of its meta) stays in saleKeys.
 */
export function bucketKeys(goodsId: number, shards: number, bucket: number): SaleKeys {
  return shards === 1 ? saleKeys(goodsId) : keysUnder(`seckill:{${goodsId}.${bucket}}`);
}

/** Every bucket's keys, bucket 0 first. */
export function allBucketKeys(goodsId: number, shards: number): SaleKeys[] {
  return Array.from({ length: shards }, (_, bucket) => bucketKeys(goodsId, shards, bucket));
}

function keysUnder(prefix: string) {
  return {
    stock: `${prefix}:stock`,
    meta: `${prefix}:meta`,
    buyers: `${prefix}:buyers`,
    inflight: `${prefix}:inflight`,
    outbox: `${prefix}:outbox`,
    claims: `${prefix}:claims`,
    voided: `${prefix}:voided`,
    results: `${prefix}:results`,
    completed: `${prefix}:completed`,
    restocked: `${prefix}:restocked`,
    /**
     * Cancelled orders paid late that took their unit again (lua/seckill-retake.lua): orderNo ->
     * {requestId, userId, quantity}, so that a rebuild counts them before MySQL says PAID.
     */
    retaken: `${prefix}:retaken`,
    /**
     * Stock lent by this bucket to a purchase recorded in another (the buyer's home) bucket:
     * requestId -> {quantity, at, userId, home}, until the purchase is recorded or the loan given back.
     */
    loans: `${prefix}:loans`,
    /**
     * The purchases recorded in this (their home) bucket on a loan: requestId -> lending bucket.
     * Kept with the sale: the loan sweeper reads it to tell whether a loan's purchase was recorded.
     */
    borrowed: `${prefix}:borrowed`,
    /**
     * A `queue` sale's admitted buyers: userId -> admitted until (ms, Redis's clock); the negated
     * time once the admission was used by an accepted purchase (given back if it is released).
     * Beside the stock, so that the deduct checks and uses an admission atomically. Like the
     * waiting room (queueKeys), it is not in MySQL: a wipe before a rebuild keeps it.
     */
    admitted: `${prefix}:queue:admitted`,
    /**
     * A `queue` sale's admission clock (lua/lib/room-clock.lua): lag, since, tickedAt. It stops
     * while the sale cannot sell, and the admissions above are kept in its time, so that the
     * deduct reads it beside them.
     */
    queueClock: `${prefix}:queue:clock`,
    /** The last confirmed reconcile verdict (JSON), shared by every instance's dashboard feed. */
    verdict: `${prefix}:verdict`,
    /** Held (with a TTL) by the instance refreshing the verdict: one refresh at a time. */
    verdictClaim: `${prefix}:verdict:claim`,
    /** Purchase answers by outcome in one second (unix seconds), summed over the instances. */
    rate: (second: number) => `${prefix}:rate:${second}`,
    userLock: (userId: number) => `${prefix}:lock:user:${userId}`,
    /** A redeemed ALTCHA challenge (by its signature), kept until it expires: valid once. */
    challenge: (signature: string) => `${prefix}:challenge:${signature}`,
    /** A one-time purchase token, stored by its SHA-256 so Redis never holds usable tokens. */
    purchaseToken: (tokenDigest: string) => `${prefix}:ptoken:${tokenDigest}`,
  };
}

export type SaleKeys = ReturnType<typeof keysUnder>;

/**
 * A `queue` sale's waiting room (modules/waiting-room/), under the sale's tag so that one script
 * joins, shuffles, admits and reads it with the stock. Joins are not in MySQL: a wipe before a
 * rebuild leaves these alone, the eviction of a sale that is over drops them.
 */
export function queueKeys(goodsId: number) {
  const prefix = `seckill:{${goodsId}}:queue`;
  return {
    /** hash: seed (the shuffle's, drawn once at startAt), head (places admitted so far), seq. */
    state: `${prefix}:state`,
    /**
     * zset: userId -> join index 0, 1, …: the pre-queue, whose places the seed gives
     * (lua/lib/queue-order.lua); it never shrinks, so that the indices stay the shuffle's domain.
     */
    pre: `${prefix}:pre`,
    /** zset: userId -> 1, 2, …: those who joined after the seed, behind the pre-queue in order. */
    line: `${prefix}:line`,
    admitted: saleKeys(goodsId).admitted,
    clock: saleKeys(goodsId).queueClock,
    /** set: userIds whose admission lapsed unused. */
    expired: `${prefix}:expired`,
    /** zset: `head:count` of each admission batch -> at (ms); the last ten seconds, for the pace. */
    admits: `${prefix}:admits`,
    /** hash: client address (an IPv6 /64) -> accounts it put into the room (the account cap). */
    addresses: `${prefix}:addresses`,
  };
}

export type QueueKeys = ReturnType<typeof queueKeys>;

/** The waiting room's keys in the order lua/queue-restore.lua takes them. */
export function queueRestoreKeys(goodsId: number): string[] {
  const keys = queueKeys(goodsId);
  return [
    keys.state,
    keys.pre,
    keys.line,
    keys.admitted,
    keys.expired,
    keys.admits,
    keys.clock,
    keys.addresses,
  ];
}

/**
 * Pub/sub channel on which the Lua scripts that write a user's result (deduct, complete, release)
 * announce it changed: the results hash's name and the user id. It carries the sale's hash tag,
 * so that in a Redis Cluster it may become a sharded channel (SPUBLISH from the scripts, in the
 * sale's slot) without a new name.
 */
export function resultChannel(goodsId: number, userId: number, shards = 1): string {
  return `${bucketKeys(goodsId, shards, homeBucket(userId, shards)).results}:${userId}`;
}

/** The kinds of event stream a buyer holds open, each bounded on its own (lua/stream-slot.lua). */
export type StreamKind = 'result' | 'queue';

const STREAM_SLOTS_PREFIX: Record<StreamKind, string> = {
  result: 'seckill:streams',
  queue: 'seckill:streams:queue',
};

/** A user's open streams of one kind, across instances (see lua/stream-slot.lua). */
export function streamSlotsKey(kind: StreamKind, userId: number): string {
  return `${STREAM_SLOTS_PREFIX[kind]}:{user:${userId}}`;
}

/** The open streams of one kind of a client address (as the rate limiter keys it), same shape. */
export function streamAddressSlotsKey(kind: StreamKind, address: string): string {
  return `${STREAM_SLOTS_PREFIX[kind]}:{ip:${address}}`;
}

/** The dashboard's latest snapshot (JSON), built by one instance and read by the others. */
export const DASHBOARD_SNAPSHOT_KEY = 'seckill:dashboard:snapshot';

/** Taken (NX) by the one instance that builds the dashboard's snapshot of this unix second. */
export function dashboardBuildKey(second: number): string {
  return `seckill:dashboard:build:${second}`;
}

/** Lock that lets one instance of many run a scheduled job. */
export function jobLockKey(job: string): string {
  return `seckill:job-lock:${job}`;
}

/**
 * A rate-limit counter and its block marker. The tag is the throttler and the tracker (user id,
 * client IP, or "all" for the global ceiling), so a limit's two keys share a slot and different
 * clients spread over the cluster.
 */
export function throttleKeys(throttler: string, tracker: string) {
  const prefix = `seckill:throttle:{${throttler}:${tracker}}`;
  return { hits: `${prefix}:hits`, block: `${prefix}:block` };
}

/** An Idempotency-Key's reservation or stored answer; scoped to the user, not the goods. */
export function idempotencyKey(userId: number, key: string): string {
  return `seckill:idem:{user:${userId}}:${key}`;
}

/**
 * A Redis server's (by run_id) recovery: `wiping` while one instance drops the sales that
 * survived its restart, `wiped` once they are gone and may be rebuilt. On a cluster the marker
 * lives on the restarted master itself (its tag is the first number whose slot the master
 * serves), so that it is lost exactly when what it vouches for is: a marker on another master
 * that restarted later would let the wipe run again over sales already rebuilt and on sale.
 */
export function recoveryKey(runId: string, scope: SlotScope): string {
  if (scope === 'all') return `seckill:recovery:${runId}`;
  let tag = 0;
  while (!scope.has(keySlot(String(tag)))) tag++;
  return `seckill:recovery:{${tag}}:${runId}`;
}

/**
 * Pub/sub channel on which an instance announces that a goods has stock again (a cancel, an
 * expiry, a void, a preheat or a rebuild), so that every instance drops its sold-out memo.
 */
export const STOCK_BACK_CHANNEL = 'seckill:stock-back';

/**
 * The blocklist: one hash (a field `type:value` per entry, its JSON as the value), small enough
 * that every instance keeps a copy in memory, refreshed when the channel says it changed.
 */
export const BLOCKLIST_KEY = 'seckill:blocklist';
export const BLOCKLIST_CHANNEL = 'seckill:blocklist-changed';

/** How often a tracker (`user:<id>` or `ip:<address>`) was throttled within the autoban window. */
export function autobanCounterKey(tracker: string): string {
  return `seckill:autoban:{${tracker}}`;
}

/**
 * The order barrier's keys (messaging/redis-barrier.store.ts), all under one tag so that one
 * script reads and writes them on a cluster: the consumers' registry, the open barriers, and
 * each barrier's hash (who drained it).
 */
export const barrierKeys = {
  consumers: 'seckill:{barrier}:consumers',
  open: 'seckill:{barrier}:open',
  barrier: (id: string) => `seckill:{barrier}:${id}`,
};
