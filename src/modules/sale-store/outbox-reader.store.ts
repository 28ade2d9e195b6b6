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

/** One bucket's purchases on their way to MySQL, for the metrics. */
export interface BucketBacklog {
  /** Accepted purchases whose publish the broker has not confirmed. */
  outbox: number;
  /** The oldest of them, on the bucket's clock (ms); null when none. */
  oldestOutboxAt: number | null;
  /** Accepted purchases not written to MySQL yet (confirmed or not). */
  unwritten: number;
  /** The acceptance time of the oldest of those (the accepting instance's clock, ms); null when none. */
  oldestAcceptedAt: number | null;
}

/** Entries of the in-flight hash read per HSCAN call, so that no one call holds Redis up. */
const BACKLOG_SCAN_COUNT = 1_000;
/** The acceptance time in an order message (messaging/order-message.ts), without parsing it whole. */
const ACCEPTED_AT = /"acceptedAt":(\d+)/;

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

  /**
   * The bucket's backlog. The oldest unwritten purchase is found by walking the in-flight hash
   * (HSCAN, BACKLOG_SCAN_COUNT a call): as long as the backlog, which the stock bounds.
   */
  async backlog(keys: SaleKeys): Promise<BucketBacklog> {
    const [outbox, oldest, unwritten] = await Promise.all([
      this.redis.zcard(keys.outbox),
      this.redis.zrange(keys.outbox, 0, 0, 'WITHSCORES'),
      this.redis.hlen(keys.inflight),
    ]);
    let oldestAcceptedAt: number | null = null;
    if (unwritten > 0) {
      let cursor = '0';
      do {
        const [next, entries] = await this.redis.hscan(
          keys.inflight,
          cursor,
          'COUNT',
          BACKLOG_SCAN_COUNT,
        );
        // [field, value, field, value…]: the values are the order messages.
        for (let i = 1; i < entries.length; i += 2) {
          const acceptedAt = Number(ACCEPTED_AT.exec(entries[i])?.[1]);
          if (acceptedAt > 0 && (oldestAcceptedAt === null || acceptedAt < oldestAcceptedAt)) {
            oldestAcceptedAt = acceptedAt;
          }
        }
        cursor = next;
      } while (cursor !== '0');
    }
    return {
      outbox,
      oldestOutboxAt: oldest.length > 1 ? Number(oldest[1]) : null,
      unwritten,
      oldestAcceptedAt,
    };
  }

  async forgetOldVoided(keys: SaleKeys, now: number): Promise<void> {
    await this.redis.zremrangebyscore(keys.voided, 0, now - VOIDED_RETENTION_MS);
  }
}
