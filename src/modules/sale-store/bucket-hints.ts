import { bucketOrder } from '../../common/stock-buckets.js';

/**
 * Per instance, the buckets of a goods recently found empty, so that a buyer whose home bucket is
 * empty does not ask every empty bucket again on each click. A hint only makes a buyer skip a
 * bucket, and it lapses after `ttlMs` or when stock comes back to the goods (the stock-back
 * announcement clears the goods' hints on every instance): it can delay a sale of returned stock
 * by at most `ttlMs`, never oversell.
 */
export class BucketHints {
  private readonly empty = new Map<number, Map<number, number>>();

  constructor(private readonly ttlMs: number) {}

  markEmpty(goodsId: number, bucket: number, now = Date.now()): void {
    if (this.ttlMs <= 0) return;
    let buckets = this.empty.get(goodsId);
    if (!buckets) this.empty.set(goodsId, (buckets = new Map<number, number>()));
    buckets.set(bucket, now + this.ttlMs);
  }

  isEmpty(goodsId: number, bucket: number, now = Date.now()): boolean {
    const until = this.empty.get(goodsId)?.get(bucket);
    if (until === undefined) return false;
    if (until > now) return true;
    this.empty.get(goodsId)!.delete(bucket);
    return false;
  }

  clear(goodsId: number): void {
    this.empty.delete(goodsId);
  }

  clearAll(): void {
    this.empty.clear();
  }

  /**
   * The buckets this buyer should ask after the home bucket, in order, without those hinted
   * empty; `skipped` counts the hinted ones (they count as seen empty for SOLD_OUT).
   */
  candidates(
    goodsId: number,
    userId: number,
    shards: number,
    now = Date.now(),
  ): { order: number[]; skipped: number } {
    const order: number[] = [];
    let skipped = 0;
    for (const bucket of bucketOrder(userId, shards)) {
      if (this.isEmpty(goodsId, bucket, now)) skipped++;
      else order.push(bucket);
    }
    return { order, skipped };
  }
}
