import { Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error.js';
import { randomHex } from '../../common/random/random-hex.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsService } from '../goods/goods.service.js';
import { keyInScope } from '../../infra/redis/redis-client.js';
import {
  saleInScope,
  type RedisRestart,
  type SlotScope,
} from '../../infra/redis/redis-watchdog.service.js';
import { recoveryKey, SALES_INDEX_KEY } from '../../infra/redis/seckill-keys.js';
import { OrdersService } from '../orders/orders.service.js';
import { SaleStateLockService } from '../sale-store/sale-state-lock.service.js';
import { BucketCountsStore } from '../sale-store/bucket-counts.store.js';
import { RestartMarkersStore } from '../sale-store/restart-markers.store.js';
import { SaleLoaderStore } from '../sale-store/sale-loader.store.js';

/** Longest a wipe may take before another instance takes it over (its holder died). */
const CLAIM_LEASE_MS = 15_000;
/** In a claim's record of the sales' last rebuilds: this sale is done. */
const WIPED = Symbol('wiped');

/** This instance's claim on one restart's wipe, kept across its attempts. */
interface WipeClaim {
  token: string;
  /** Per sale: its last rebuild when the wipe began (OrdersService.lastRebuild), or WIPED. */
  rebuilds: Map<number, string | null | typeof WIPED>;
}

/**
 * A restarted Redis may have come back with a snapshot (RDB/AOF, or a replica that was behind):
 * its stock, buyers and voided requests are older than the truth, and trusting them could sell
 * twice or revive a purchase that was answered 503. Before purchases reopen or a sale is rebuilt,
 * one instance wipes what survived; every other instance waits until it has.
 */
@Injectable()
export class SurvivorWipeService {
  private readonly logger = new Logger(SurvivorWipeService.name);
  /** By recovery marker. */
  private readonly claims = new Map<string, WipeClaim>();

  constructor(
    private readonly goods: GoodsService,
    private readonly orders: OrdersService,
    private readonly buckets: BucketCountsStore,
    private readonly markers: RestartMarkersStore,
    private readonly loader: SaleLoaderStore,
    private readonly saleLock: SaleStateLockService,
    @InjectConfig(jobsConfig) private readonly jobs: JobsConfig,
  ) {}

  /**
   * The sales a restart concerns: open, or opening within the preheat lookahead, and held in
   * these slots (all of them on a single Redis; the restarted master's on a cluster).
   */
  async salesToRecover(slots: SlotScope): Promise<GoodsEntity[]> {
    const sales = await this.goods.startingBefore(
      new Date(Date.now() + this.jobs.preheat.lookaheadMs),
    );
    return sales.filter((sale) => {
      this.buckets.remember(sale.id, sale.stockShards);
      return saleInScope(slots, sale.id, sale.stockShards);
    });
  }

  /**
   * True once what survived of the restart's slots on the new server is gone: wiped here now, or
   * by another instance before. False while another instance is at it, or while another path
   * holds a sale's sale-state lock (the next call goes on with the sales not wiped yet).
   *
   * Each sale is wiped under its sale-state lock, once two things are read again there: the
   * claim is still this instance's (a claim that lapsed while this one stalled may have been
   * taken over and the wipe done, the sales rebuilt since), and the sale was not rebuilt since
   * the wipe began (a rebuild loads it from MySQL: not a survivor).
   */
  async done(restart: RedisRestart): Promise<boolean> {
    const marker = recoveryKey(restart.current, restart.slots);
    if (await this.markers.isWiped(marker)) {
      this.claims.delete(marker);
      return true;
    }
    // Read before claiming: MySQL being down then fails here rather than with the claim held.
    const sales = await this.salesToRecover(restart.slots);
    const claim: WipeClaim = this.claims.get(marker) ?? {
      token: randomHex(8),
      rebuilds: new Map(),
    };
    if (!(await this.markers.claim(marker, claim.token, CLAIM_LEASE_MS))) {
      this.claims.delete(marker);
      return false;
    }
    this.claims.set(marker, claim);
    for (const sale of sales) {
      if (!claim.rebuilds.has(sale.id)) {
        claim.rebuilds.set(sale.id, await this.orders.lastRebuild(sale.id));
      }
    }
    for (const sale of sales) {
      const rebuilt = claim.rebuilds.get(sale.id);
      if (rebuilt === WIPED) continue;
      const outcome = await this.wipeSale(sale.id, marker, claim.token, rebuilt ?? null);
      if (outcome === 'taken over') this.claims.delete(marker);
      if (outcome !== 'wiped') return false;
      claim.rebuilds.set(sale.id, WIPED);
    }
    // The index of preheated sales (which the outbox sweeper and the eviction walk) lived there:
    // the sales other servers still hold are listed again (the rebuilt ones list themselves).
    if (keyInScope(restart.slots, SALES_INDEX_KEY)) await this.loader.reindexSales();
    await this.markers.markWiped(marker);
    this.claims.delete(marker);
    this.logger.warn(
      `wiped ${sales.length} sales that survived the restart, to rebuild them: run_id=${restart.current}`,
    );
    return true;
  }

  /** One sale's wipe, under its sale-state lock, its premise read again there (see done). */
  private async wipeSale(
    goodsId: number,
    marker: string,
    token: string,
    rebuiltThen: string | null,
  ): Promise<'wiped' | 'taken over' | 'busy'> {
    try {
      return await this.saleLock.hold(goodsId, 'survivor-wipe', async () => {
        if (!(await this.markers.holds(marker, token))) return 'taken over';
        if ((await this.orders.lastRebuild(goodsId)) === rebuiltThen) {
          await this.loader.forget(goodsId);
        }
        return 'wiped';
      });
    } catch (error) {
      if (error instanceof DomainError) return 'busy';
      throw error;
    }
  }
}
