import { Injectable, Logger } from '@nestjs/common';
import { DomainError, UnavailableError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsService } from '../goods/goods.service.js';
import { OrderBarrier, type OpenBarrier } from '../messaging/order-barrier.service.js';
import { OrdersService } from '../orders/orders.service.js';
import { RedisLocks } from '../../infra/redis/redis-locks.js';
import { StockService } from '../stock/stock.service.js';

export interface PreheatResult {
  goodsId: number;
  stock: number;
  loaded: boolean;
}

const REBUILD_LOCK_TTL_MS = 30_000;

@Injectable()
export class PreheatService {
  private readonly logger = new Logger(PreheatService.name);
  /** When each sale being rebuilt was known lost, at the latest. */
  private readonly lostBy = new Map<number, number>();
  /** The order barrier rebuilds wait for (one serves every sale lost before it opened). */
  private barrier?: OpenBarrier;

  constructor(
    private readonly goods: GoodsService,
    private readonly orders: OrdersService,
    private readonly stock: StockService,
    private readonly barriers: OrderBarrier,
    private readonly locks: RedisLocks,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /**
   * Copies the sale into Redis. Idempotent: once Redis holds the sale's stock it is left alone
   * (only the window and limit are refreshed), so a live sale never has its sales reset.
   * `lostBy`: when Redis is known to have lost the sale, if the caller knows (a restart's
   * detection); else the sale is taken as lost now, when it is found missing.
   */
  async preheat(goodsId: number, lostBy = Date.now()): Promise<PreheatResult> {
    const goods = await this.goods.findOrThrow(goodsId);
    if (await this.stock.isPreheated(goodsId)) return this.load(goods, goods.stock, undefined);
    if (goods.stock === goods.totalStock && (await this.orders.hasOrders(goodsId)) === false) {
      return this.load(goods, goods.stock, undefined);
    }
    return this.rebuild(goods, lostBy);
  }

  /**
   * Loads the sale into Redis from MySQL's stock and orders, whatever Redis holds of it (the
   * caller wiped it): for a sale MySQL sold while Redis was down (fallback/).
   */
  async rebuildFromMysql(goodsId: number, lostBy: number): Promise<PreheatResult> {
    return this.rebuild(await this.goods.findOrThrow(goodsId), lostBy);
  }

  /**
   * Redis lost a sale that has already sold. Its stock and buyers come back from MySQL, once the
   * order messages the lost Redis had accepted are written there: until then MySQL's stock is
   * too high by them, and the sale stays closed (503 UNAVAILABLE, nothing taken).
   */
  private async rebuild(goods: GoodsEntity, lostBy: number): Promise<PreheatResult> {
    const lock = await this.locks.tryLockJob(`rebuild:${goods.id}`, REBUILD_LOCK_TTL_MS);
    if (!lock) throw new UnavailableError('The sale is being rebuilt; try again shortly');
    try {
      await this.ensureOrdersSettled(goods.id, lostBy);
      // Buckets that survived hold stock counted again from MySQL now (the sale is closed and
      // its orders are settled): dropped, so that every bucket is rebuilt from the same count.
      if (goods.stockShards > 1) await this.stock.forget(goods.id);
      const history = await this.orders.history(goods.id);
      const result = await this.load(goods, history.stock, history);
      this.lostBy.delete(goods.id);
      this.logger.warn(
        `rebuilt from mysql: goods=${goods.id} stock=${result.stock} buyers=${history.buyers.length} cancelled=${history.cancelledOrderNos.length}`,
      );
      return result;
    } finally {
      await lock.release();
    }
  }

  /**
   * Every order message the lost Redis had accepted must be written (or dropped for good) before
   * the sale is counted from MySQL. An order barrier (OrderBarrier) proves it for every message
   * the broker took before the barrier's own, so the barrier is opened once every such message
   * is in the broker: a purchase Redis accepted before the loss (`lostBy` at the latest) had its
   * publish confirmed within PUBLISH_CONFIRM_TIMEOUT_MS, or it was answered 503 and voided. Only
   * that wait is fixed; the rest is the consumers settling what they hold.
   */
  private async ensureOrdersSettled(goodsId: number, lostBy: number): Promise<void> {
    const since = Math.min(this.lostBy.get(goodsId) ?? lostBy, lostBy);
    this.lostBy.set(goodsId, since);
    const openAt = since + this.config.publishConfirmTimeoutMs;
    if (Date.now() < openAt) {
      throw new UnavailableError(
        `Waiting ${openAt - Date.now()} ms more for purchases accepted before the loss to reach the broker`,
      );
    }
    if (!this.barrier || this.barrier.openedAt < openAt) this.barrier = await this.barriers.open();
    const state = await this.barriers.check(this.barrier);
    if (state === 'restart') this.barrier = undefined;
    if (state !== 'passed') {
      throw new UnavailableError(
        'Order messages accepted before the loss are still on their way to MySQL; the sale reopens once they are written',
      );
    }
    this.logger.log(
      `order barrier passed: id=${this.barrier!.id} ${Date.now() - this.barrier!.openedAt} ms after it opened`,
    );
  }

  private async load(
    goods: GoodsEntity,
    stock: number,
    history: Parameters<StockService['preheat']>[2] | undefined,
  ): Promise<PreheatResult> {
    const result = await this.stock.preheat(
      goods.id,
      {
        totalStock: goods.totalStock,
        stock,
        startAt: goods.startAt,
        endAt: goods.endAt,
        perUserLimit: goods.perUserLimit,
        stockShards: goods.stockShards,
      },
      history ?? { buyers: [], cancelledOrderNos: [] },
    );
    if (result.loaded) this.logger.log(`preheated: goods=${goods.id} stock=${result.stock}`);
    return { goodsId: goods.id, stock: result.stock, loaded: result.loaded };
  }

  /**
   * Frees Redis of sales that ended more than `afterEndMs` ago (or no longer exist), once
   * nothing of theirs is in flight. Returns the goods ids it evicted.
   */
  async evictEnded(afterEndMs: number, now = Date.now()): Promise<number[]> {
    const preheated = await this.stock.preheatedSales();
    const known = new Map((await this.goods.findByIds(preheated)).map((g) => [g.id, g]));
    const evicted: number[] = [];
    for (const goodsId of preheated) {
      const goods = known.get(goodsId);
      if (goods && goods.endAt.getTime() + afterEndMs > now) continue;
      if (await this.stock.evict(goodsId)) {
        evicted.push(goodsId);
        this.logger.log(`sale evicted from redis: goods=${goodsId}`);
      } else {
        this.logger.warn(`sale not evicted, purchases still in flight: goods=${goodsId}`);
      }
    }
    return evicted;
  }

  /** Preheats every sale that opens within `lookaheadMs` and has not ended. */
  async preheatUpcoming(lookaheadMs: number): Promise<PreheatResult[]> {
    const sales = await this.goods.startingBefore(new Date(Date.now() + lookaheadMs));
    const results: PreheatResult[] = [];
    for (const sale of sales) {
      try {
        results.push(await this.preheat(sale.id));
      } catch (error) {
        // One sale waiting for its rebuild must not hold the others back.
        if (!(error instanceof DomainError)) throw error;
        this.logger.warn(`preheat deferred: goods=${sale.id} ${error.message}`);
      }
    }
    return results;
  }
}
