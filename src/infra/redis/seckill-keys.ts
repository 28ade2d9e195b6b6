/**
 * Every Redis key of the service, in one place. A sale's keys share the `{goodsId}` hash tag so
 * that they live in one cluster slot and one Lua script may touch them all.
 */
export const SALES_INDEX_KEY = 'seckill:sales';

export function saleKeys(goodsId: number) {
  const prefix = `seckill:{${goodsId}}`;
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
    /** The last confirmed reconcile verdict (JSON), shared by every instance's dashboard feed. */
    verdict: `${prefix}:verdict`,
    /** Held (with a TTL) by the instance refreshing the verdict: one refresh at a time. */
    verdictClaim: `${prefix}:verdict:claim`,
    /** Purchase answers by outcome in one second (unix seconds), summed over the instances. */
    rate: (second: number) => `${prefix}:rate:${second}`,
    userLock: (userId: number) => `${prefix}:lock:user:${userId}`,
    /** A one-time purchase token, stored by its SHA-256 so Redis never holds usable tokens. */
    purchaseToken: (tokenDigest: string) => `${prefix}:ptoken:${tokenDigest}`,
  };
}

export type SaleKeys = ReturnType<typeof saleKeys>;

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
 * survived its restart, `wiped` once they are gone and may be rebuilt.
 */
export function recoveryKey(runId: string): string {
  return `seckill:recovery:${runId}`;
}

/**
 * Pub/sub channel on which an instance announces that a goods has stock again (a cancel, an
 * expiry, a void, a preheat or a rebuild), so that every instance drops its sold-out memo.
 */
export const STOCK_BACK_CHANNEL = 'seckill:stock-back';
