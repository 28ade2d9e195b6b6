import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { BucketCountsStore } from './bucket-counts.store.js';

/** What the sale's Redis side says without changing it: its clock, its end, its stock left. */
@Injectable()
export class SaleReadsStore {
  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly lua: LuaScriptsService,
    private readonly counts: BucketCountsStore,
  ) {}

  /**
   * The clock (epoch ms) the Lua scripts stamp this sale's records with: that of the server
   * holding the sale (on a cluster, the master of its slot; masters' clocks may differ). With
   * several buckets, the earliest of their servers' clocks: "since then" then covers every
   * bucket's records.
   */
  async serverTimeMs(goodsId: number): Promise<number> {
    let earliest = Infinity;
    for (const keys of await this.counts.buckets(goodsId)) {
      earliest = Math.min(earliest, await this.lua.serverTimeMs(keys.stock));
    }
    return earliest;
  }

  /** The clock the scripts stamp one bucket's records with (its outbox, its loans). */
  bucketServerTimeMs(keys: SaleKeys): Promise<number> {
    return this.lua.serverTimeMs(keys.stock);
  }

  /** The sale's end as Redis holds it (epoch ms), or null when it is not preheated. */
  async saleEndAt(goodsId: number): Promise<number | null> {
    const [first] = await this.counts.buckets(goodsId);
    const value = await this.redis.hget(first.meta, 'endAt');
    return value === null ? null : Number(value);
  }

  /** Remaining stock in Redis (over every bucket), or null when the sale is not preheated. */
  async remaining(goodsId: number): Promise<number | null> {
    let total = 0;
    for (const keys of await this.counts.buckets(goodsId)) {
      const value = await this.redis.get(keys.stock);
      if (value === null) return null;
      total += Number(value);
    }
    return total;
  }
}
