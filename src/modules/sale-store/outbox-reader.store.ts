import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';
import { BucketCountsStore } from './bucket-counts.store.js';
import { SaleLoaderStore } from './sale-loader.store.js';
import { SaleReadsStore } from './sale-reads.store.js';

/**
 * How long a released request id is remembered, so that its late message is dropped (Redis's
 * voided set, and MySQL's record of a void: orders/voided-requests.service.ts).
 */
export const VOIDED_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * The outbox sweeper's view of the sales: which are preheated, their buckets and each bucket's
 * clock, the accepted purchases whose publish the broker has not confirmed, and the voided
 * request ids old enough to forget.
 */
@Injectable()
export class OutboxReaderStore {
  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly counts: BucketCountsStore,
    private readonly loader: SaleLoaderStore,
    private readonly reads: SaleReadsStore,
  ) {}

  sales(): Promise<number[]> {
    return this.loader.preheatedSales();
  }

  buckets(goodsId: number): Promise<SaleKeys[]> {
    return this.counts.buckets(goodsId);
  }

  /** The clock one bucket's outbox is stamped with (its master's, on a cluster). */
  clock(keys: SaleKeys): Promise<number> {
    return this.reads.bucketServerTimeMs(keys);
  }

  /** Accepted purchases whose publish was not confirmed before `olderThan` (epoch ms). */
  async stale(
    keys: SaleKeys,
    olderThan: number,
    limit: number,
  ): Promise<{ requestId: string; message: string | null }[]> {
    const requestIds = await this.redis.zrangebyscore(keys.outbox, 0, olderThan, 'LIMIT', 0, limit);
    if (requestIds.length === 0) return [];
    const messages = await this.redis.hmget(keys.inflight, ...requestIds);
    return requestIds.map((requestId, index) => ({ requestId, message: messages[index] }));
  }

  /** The broker confirmed the message: the sweeper must not publish it again. */
  async markPublished(keys: SaleKeys, requestIds: string[]): Promise<void> {
    if (requestIds.length === 0) return;
    await this.redis.zrem(keys.outbox, ...requestIds);
  }

  async forgetOldVoided(keys: SaleKeys, now: number): Promise<void> {
    await this.redis.zremrangebyscore(keys.voided, 0, now - VOIDED_RETENTION_MS);
  }
}
