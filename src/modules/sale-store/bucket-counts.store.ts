import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import {
  allBucketKeys,
  bucketKeys,
  saleKeys,
  type SaleKeys,
} from '../../infra/redis/seckill-keys.js';
import { homeBucket } from '../../common/stock-buckets.js';
import { GoodsRepository } from '../goods/goods.repository.js';

/**
 * How many buckets each goods' stock is split over (`stockShards`, see seckill-keys.ts
 * bucketKeys), and so where each of its keys lives. A goods with one bucket is the n-bucket case
 * with n = 1: every caller goes through here the same way.
 */
@Injectable()
export class BucketCountsStore {
  /** Buckets per goods: fixed at creation, so once read it is kept. */
  private readonly counts = new Map<number, number>();

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly goods: GoodsRepository,
  ) {}

  /**
   * From memory once known, else from Redis (a preheated sale says it in its meta: `shards` for
   * several buckets, a one-bucket sale's own meta otherwise), so that purchases of a preheated
   * sale need no MySQL; else from MySQL (an unknown goods has one: its keys then say it is not
   * preheated).
   */
  async of(goodsId: number): Promise<number> {
    const known = this.counts.get(goodsId);
    if (known !== undefined) return known;
    const [shards, total] = await this.redis.hmget(saleKeys(goodsId).meta, 'shards', 'total');
    if (shards !== null || total !== null) {
      this.remember(goodsId, shards === null ? 1 : Number(shards));
      return this.known(goodsId);
    }
    const fromRow = await this.goods.stockShardsOf(goodsId);
    if (fromRow === null) return 1;
    this.remember(goodsId, fromRow);
    return fromRow;
  }

  /** The bucket count when this instance knows it already, else 1. */
  known(goodsId: number): number {
    return this.counts.get(goodsId) ?? 1;
  }

  /** Tells this instance a goods' bucket count (a preheat or recovery read its row anyway). */
  remember(goodsId: number, shards: number): void {
    if (this.counts.size >= 100_000) this.counts.clear();
    this.counts.set(goodsId, Math.max(1, shards));
  }

  /** The buyer's home bucket's keys (the per-user lock and result live there). */
  async homeKeys(goodsId: number, userId: number): Promise<SaleKeys> {
    const shards = await this.of(goodsId);
    return bucketKeys(goodsId, shards, homeBucket(userId, shards));
  }

  /** The keys of every bucket of the sale (one for most sales). */
  async buckets(goodsId: number): Promise<SaleKeys[]> {
    return allBucketKeys(goodsId, await this.of(goodsId));
  }

  /**
   * Runs `work` once per home bucket, with the indexes of the purchases homed there: a script
   * call touches the keys of one bucket (one cluster slot).
   */
  async perHomeBucket(
    goodsId: number,
    purchases: { userId: number }[],
    work: (keys: SaleKeys, indexes: number[]) => Promise<void>,
  ): Promise<void> {
    if (purchases.length === 0) return;
    const shards = await this.of(goodsId);
    const groups = new Map<number, number[]>();
    purchases.forEach(({ userId }, index) => {
      const home = homeBucket(userId, shards);
      const group = groups.get(home);
      if (group) group.push(index);
      else groups.set(home, [index]);
    });
    for (const [home, indexes] of groups) {
      await work(bucketKeys(goodsId, shards, home), indexes);
    }
  }
}

/** `total` over `parts` buckets as evenly as whole units go, the remainder to the first ones. */
export function splitEvenly(total: number, parts: number): number[] {
  const base = Math.floor(total / parts);
  const extra = total - base * parts;
  return Array.from({ length: parts }, (_, index) => base + (index < extra ? 1 : 0));
}
