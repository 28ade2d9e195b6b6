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
    userLock: (userId: number) => `${prefix}:lock:user:${userId}`,
  };
}

export type SaleKeys = ReturnType<typeof saleKeys>;

/** Lock that lets one instance of many run a scheduled job. */
export function jobLockKey(job: string): string {
  return `seckill:job-lock:${job}`;
}
