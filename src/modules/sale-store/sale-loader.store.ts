import { Inject, Injectable } from '@nestjs/common';
import { scanKeys, type RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import {
  allBucketKeys,
  queueKeys,
  SALES_INDEX_KEY,
  saleKeys,
} from '../../infra/redis/seckill-keys.js';
import { homeBucket } from '../../common/stock-buckets.js';
import type { Admission } from '../../infra/database/entities/goods.entity.js';
import { FaultInjectorService } from '../../config/fault-injector.service.js';
import { BucketCountsStore, splitEvenly } from './bucket-counts.store.js';
import { LoadScripts } from './load.scripts.js';
import { SoldOutMemoStore } from './sold-out-memo.store.js';

/** What MySQL says a sale sold: its buyers, and the orders cancelled since (to restock once). */
export interface SaleHistory {
  buyers: { userId: number; quantity: number }[];
  cancelledOrderNos: string[];
}

export interface SaleSnapshot {
  totalStock: number;
  startAt: Date;
  endAt: Date;
  perUserLimit: number;
  stock: number;
  admission: Admission;
}

/**
 * Puts a sale into Redis and takes it out: the preheat's load, the index of preheated sales the
 * sweepers walk, the eviction of a sale that is over, and the wipe before a rebuild.
 */
@Injectable()
export class SaleLoaderStore {
  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly scripts: LoadScripts,
    private readonly counts: BucketCountsStore,
    private readonly soldOut: SoldOutMemoStore,
    private readonly faults: FaultInjectorService,
  ) {}

  /**
   * Loads the sale unless Redis already holds its stock. When MySQL already has orders (Redis
   * lost the sale), their buyers and the cancelled orders' numbers are written before the stock
   * key makes the sale purchasable again, so no buyer buys twice and no cancellation is
   * restocked twice.
   *
   * `history` is `refresh` when the caller found the sale loaded (under its sale-state lock): it
   * brings no history, and only the window and limit are refreshed. The caller says so, never a second read
   * here: across a Redis restart the two reads disagreed (chaos seed 9811), and this one, finding
   * the sale missing, loaded it whole without its buyers over the restart's wipe. A refresh
   * writes nothing to a bucket Redis has lost and answers `lost`, and the sale waits for a
   * rebuild with its history.
   */
  async preheat(
    goodsId: number,
    sale: SaleSnapshot & { stockShards: number },
    history: SaleHistory | 'refresh',
  ): Promise<{ loaded: boolean; lost: boolean; stock: number }> {
    const refresh = history === 'refresh';
    await this.faults.pausePoint('preheat-before-stock', { goodsId });
    this.counts.remember(goodsId, sale.stockShards);
    const buckets = allBucketKeys(goodsId, sale.stockShards);
    // Where another instance looks the count up (the buckets have their own tags).
    if (buckets.length > 1) await this.redis.hset(saleKeys(goodsId).meta, 'shards', buckets.length);
    const shares = splitEvenly(sale.stock, buckets.length);
    const byHome = buckets.map(() => [] as { userId: number; quantity: number }[]);
    if (!refresh) {
      for (const buyer of history.buyers)
        byHome[homeBucket(buyer.userId, buckets.length)].push(buyer);
    }
    let loaded = false;
    let lost = false;
    let stock = 0;
    for (const [bucket, keys] of buckets.entries()) {
      // Every bucket: a cancelled order is restocked at its buyer's home, whichever that is.
      const result = await this.scripts.preheat(
        keys,
        { ...sale, stock: shares[bucket] },
        {
          buyers: byHome[bucket],
          restocked: refresh ? [] : history.cancelledOrderNos,
        },
        { refresh },
      );
      loaded ||= result.loaded;
      lost ||= result.lost;
      stock += result.stock;
    }
    if (lost) return { loaded: false, lost, stock: 0 };
    await this.redis.sadd(SALES_INDEX_KEY, String(goodsId));
    // The preheat job runs on every open sale each interval; only a load puts stock in.
    if (loaded) await this.soldOut.stockBack(goodsId);
    return { loaded, lost, stock };
  }

  /**
   * True when Redis holds the sale: the stock and the meta (window, limit) of every bucket, what
   * a purchase needs (without either it is NOT_PREHEATED).
   */
  async isPreheated(goodsId: number): Promise<boolean> {
    for (const keys of await this.counts.buckets(goodsId)) {
      if ((await this.redis.exists(keys.stock, keys.meta)) !== 2) return false;
    }
    return true;
  }

  /**
   * Drops everything Redis holds for a sale that is over. Refused (false) while purchases are
   * still on their way to MySQL: their bookkeeping must outlive them.
   */
  async evict(goodsId: number): Promise<boolean> {
    const buckets = await this.counts.buckets(goodsId);
    for (const keys of buckets) {
      if ((await this.redis.hlen(keys.inflight)) > 0) return false;
    }
    await this.forget(goodsId);
    await this.redis.del(...Object.values(queueKeys(goodsId)));
    for (const keys of buckets) await this.redis.del(keys.admitted);
    await this.redis.srem(SALES_INDEX_KEY, String(goodsId));
    return true;
  }

  /**
   * Drops a sale's keys unconditionally (they are about to be rebuilt from MySQL). `keepVoided`:
   * the request ids given up stay (a void is final: the late message of a purchase answered 503
   * is still dropped after the rebuild). The admitted buyers and their clock stay too: like the
   * waiting room, they are not in MySQL.
   */
  async forget(goodsId: number, { keepVoided = false } = {}): Promise<void> {
    const buckets = await this.counts.buckets(goodsId);
    const sets = buckets.length === 1 ? buckets : [saleKeys(goodsId), ...buckets];
    for (const keys of sets) {
      const names = Object.values(keys).filter(
        (key): key is string =>
          typeof key === 'string' &&
          key !== keys.admitted &&
          key !== keys.queueClock &&
          !(keepVoided && key === keys.voided),
      );
      // One DEL per bucket: a cluster refuses a DEL whose keys are in different slots.
      await this.redis.del(...names);
    }
    // A queue sale's waiting room stays, but is no longer taken as the journal's: it is written
    // back from MySQL before the sale opens again (QueueRestoreService).
    await this.scripts.dropQueueJournalMark(goodsId);
  }

  /** Goods ids that were ever preheated on this Redis (the sweepers walk these). */
  async preheatedSales(): Promise<number[]> {
    const members = await this.redis.smembers(SALES_INDEX_KEY);
    return members.map(Number).filter((id) => Number.isSafeInteger(id) && id > 0);
  }

  /**
   * Lists again, in the index of preheated sales, every sale some Redis server holds (by its
   * meta key, found with SCAN on every master): the index was lost with the server that held it.
   */
  async reindexSales(): Promise<void> {
    const found = (await scanKeys(this.redis, 'seckill:{*}:meta'))
      .map((key) => /^seckill:\{(\d+)(?:\.\d+)?\}:meta$/.exec(key)?.[1])
      .filter((id): id is string => id !== undefined);
    const ids = [...new Set(found)];
    for (let i = 0; i < ids.length; i += 1_000) {
      await this.redis.sadd(SALES_INDEX_KEY, ...ids.slice(i, i + 1_000));
    }
  }
}
