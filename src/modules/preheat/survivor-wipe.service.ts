import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsService } from '../goods/goods.service.js';
import { keyInScope } from '../../infra/redis/redis-client.js';
import {
  saleInScope,
  type RedisRestart,
  type SlotScope,
} from '../../infra/redis/redis-watchdog.js';
import { recoveryKey, SALES_INDEX_KEY } from '../../infra/redis/seckill-keys.js';
import { StockService } from '../stock/stock.service.js';

/** Longest a wipe may take before another instance takes it over (its holder died). */
const CLAIM_LEASE_MS = 15_000;

/**
 * A restarted Redis may have come back with a snapshot (RDB/AOF, or a replica that was behind):
 * its stock, buyers and voided requests are older than the truth, and trusting them could sell
 * twice or revive a purchase that was answered 503. Before purchases reopen or a sale is rebuilt,
 * one instance wipes what survived; every other instance waits until it has.
 */
@Injectable()
export class SurvivorWipe {
  private readonly logger = new Logger(SurvivorWipe.name);

  constructor(
    private readonly goods: GoodsService,
    private readonly stock: StockService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /**
   * The sales a restart concerns: open, or opening within the preheat lookahead, and held in
   * these slots (all of them on a single Redis; the restarted master's on a cluster).
   */
  async salesToRecover(slots: SlotScope): Promise<GoodsEntity[]> {
    const sales = await this.goods.startingBefore(
      new Date(Date.now() + this.config.preheatLookaheadMs),
    );
    return sales.filter((sale) => {
      this.stock.rememberShards(sale.id, sale.stockShards);
      return saleInScope(slots, sale.id, sale.stockShards);
    });
  }

  /**
   * True once what survived of the restart's slots on the new server is gone: wiped here now, or
   * by another instance before. False while another instance is at it.
   */
  async done(restart: RedisRestart): Promise<boolean> {
    const marker = recoveryKey(restart.current, restart.slots);
    if (await this.stock.isRecovered(marker)) return true;
    // Read before claiming: MySQL being down then fails here rather than with the claim held.
    const sales = await this.salesToRecover(restart.slots);
    if (!(await this.stock.claimRecovery(marker, CLAIM_LEASE_MS))) return false;
    for (const sale of sales) await this.stock.forget(sale.id);
    // The index of preheated sales (which the outbox sweeper and the eviction walk) lived there:
    // the sales other servers still hold are listed again (the rebuilt ones list themselves).
    if (keyInScope(restart.slots, SALES_INDEX_KEY)) await this.stock.reindexSales();
    await this.stock.markRecovered(marker);
    this.logger.warn(
      `wiped ${sales.length} sales that survived the restart, to rebuild them: run_id=${restart.current}`,
    );
    return true;
  }
}
