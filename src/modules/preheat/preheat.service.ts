import { Injectable, Logger } from '@nestjs/common';
import { DomainError, UnavailableError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsService } from '../goods/goods.service.js';
import { OrderPublisher } from '../messaging/order-publisher.service.js';
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
  private ordersEmptySince: number | null = null;

  constructor(
    private readonly goods: GoodsService,
    private readonly orders: OrdersService,
    private readonly stock: StockService,
    private readonly publisher: OrderPublisher,
    private readonly locks: RedisLocks,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /**
   * Copies the sale into Redis. Idempotent: once Redis holds the sale's stock it is left alone
   * (only the window and limit are refreshed), so a live sale never has its sales reset.
   */
  async preheat(goodsId: number): Promise<PreheatResult> {
    const goods = await this.goods.findOrThrow(goodsId);
    if (await this.stock.isPreheated(goodsId)) return this.load(goods, goods.stock, undefined);
    if (goods.stock === goods.totalStock && (await this.orders.hasOrders(goodsId)) === false) {
      return this.load(goods, goods.stock, undefined);
    }
    return this.rebuild(goods);
  }

  /**
   * Redis lost a sale that has already sold. Its stock and buyers come back from MySQL, once the
   * order messages the lost Redis had accepted are written there: until then MySQL's stock is
   * too high by them, and the sale stays closed (503 UNAVAILABLE, nothing taken).
   */
  private async rebuild(goods: GoodsEntity): Promise<PreheatResult> {
    const lock = await this.locks.tryLockJob(`rebuild:${goods.id}`, REBUILD_LOCK_TTL_MS);
    if (!lock) throw new UnavailableError('The sale is being rebuilt; try again shortly');
    try {
      await this.ensureOrdersSettled();
      const history = await this.orders.history(goods.id);
      const result = await this.load(goods, history.stock, history);
      this.logger.warn(
        `rebuilt from mysql: goods=${goods.id} stock=${result.stock} buyers=${history.buyers.length} cancelled=${history.cancelledOrderNos.length}`,
      );
      return result;
    } finally {
      await lock.release();
    }
  }

  /**
   * The orders queue must have been empty for a quiet period, not just now: messages a consumer
   * already holds (a batch retrying while Redis was down, possibly on another instance) are not
   * counted by the broker, and a consumer retries within its longest backoff.
   */
  private async ensureOrdersSettled(): Promise<void> {
    const waiting = await this.publisher.ordersWaiting();
    if (waiting > 0) {
      this.ordersEmptySince = null;
      throw new UnavailableError(
        `${waiting} order messages are still on their way to MySQL; the sale reopens once they are written`,
      );
    }
    this.ordersEmptySince ??= Date.now();
    const left = this.ordersEmptySince + this.config.rebuildQuietMs - Date.now();
    if (left > 0) {
      throw new UnavailableError(
        `Waiting ${left} ms more for consumers to finish the orders they hold; the sale reopens then`,
      );
    }
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
