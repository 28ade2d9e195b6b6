import { Injectable, Logger } from '@nestjs/common';
import { DomainError, UnavailableError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { hasWaitingRoom, type GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsService } from '../goods/goods.service.js';
import { RedisBarrierStore, type OpenBarrier } from '../messaging/redis-barrier.store.js';
import { OrdersService } from '../orders/orders.service.js';
import { QueueRestoreService } from '../queue-journal/queue-restore.service.js';
import { SaleStateLockService, type SaleStateHold } from '../sale-store/sale-state-lock.service.js';
import { SaleLoaderStore, type SaleHistory } from '../sale-store/sale-loader.store.js';

export interface PreheatResult {
  goodsId: number;
  stock: number;
  loaded: boolean;
}

/** A rebuild of a sale this instance began and has not finished yet. */
interface PendingRebuild {
  /**
   * When what Redis held of the sale was wiped (monotonic ms: the wait after it is a span of this
   * host's time, whatever its wall clock does): nothing was sold on that copy after it.
   */
  wipedAt: number;
  /** The goods' last rebuild then (OrdersService.lastRebuild): another one since began anew. */
  after: string | null;
}

@Injectable()
export class PreheatService {
  private readonly logger = new Logger(PreheatService.name);
  private readonly pending = new Map<number, PendingRebuild>();
  /** The order barrier rebuilds wait for (one serves every rebuild that began before it opened). */
  private barrier?: OpenBarrier;

  constructor(
    private readonly goods: GoodsService,
    private readonly orders: OrdersService,
    private readonly loader: SaleLoaderStore,
    private readonly barriers: RedisBarrierStore,
    private readonly saleLock: SaleStateLockService,
    private readonly queueRestore: QueueRestoreService,
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
  ) {}

  /**
   * Copies the sale into Redis. Idempotent: once Redis holds the sale it is left alone (only the
   * window and limit are refreshed), so a live sale never has its sales reset. Under the goods'
   * sale-state lock (503 while another path holds it).
   */
  async preheat(goodsId: number): Promise<PreheatResult> {
    return this.saleLock.hold(goodsId, 'preheat', (held) => this.preheatHeld(held));
  }

  /** preheat, for a caller that holds the goods' sale-state lock already (a repair). */
  async preheatHeld(held: SaleStateHold): Promise<PreheatResult> {
    // Read under the lock: another path may have loaded (or wiped) the sale since the caller
    // found it missing.
    const goods = await this.goods.findOrThrow(held.goodsId);
    if (await this.loader.isPreheated(goods.id)) {
      // Whatever rebuild this instance had begun, another finished it.
      this.pending.delete(goods.id);
      return this.load(goods, goods.stock, 'refresh');
    }
    // Its full stock at once only on its first load: a sale Redis held before may have accepted
    // purchases whose orders are still on their way to MySQL (Redis restarted empty before any
    // was written), which only a rebuild's order barrier waits for.
    if (
      goods.stock === goods.totalStock &&
      (await this.orders.hasOrders(goods.id)) === false &&
      (await this.goods.markFirstLoad(goods.id))
    ) {
      // Its waiting room made the journal's now, not by the first join of the crowd.
      if (hasWaitingRoom(goods)) await this.queueRestore.ensureHeld(held);
      return this.load(goods, goods.stock, { buyers: [], cancelledOrderNos: [] });
    }
    return this.rebuild(goods, held);
  }

  /**
   * Loads the sale into Redis from MySQL's stock and orders, whatever Redis holds of it: for a
   * sale MySQL sold while Redis was down (src/modules/fallback/), whose caller read that mark under the lock.
   */
  async rebuildFromMysql(held: SaleStateHold): Promise<PreheatResult> {
    return this.rebuild(await this.goods.findOrThrow(held.goodsId), held);
  }

  /**
   * Redis lost a sale that has already sold, or holds a copy of it that MySQL's sales outdate.
   * Its stock and buyers come back from MySQL, once the order messages that copy had accepted are
   * written there: until then MySQL's stock is too high by them, and the sale stays closed (503
   * UNAVAILABLE, nothing taken). Called under the goods' sale-state lock.
   *
   * A rebuild begins by wiping what Redis holds of the sale (what survived a restart, a stale
   * copy, a load cut short): from then on nothing is sold on it, and the barrier it waits for is
   * opened after that. A rebuild that finds the goods rebuilt elsewhere since it began (whose
   * copy may have sold and been lost again) begins anew: it never trusts a barrier opened before
   * its own wipe.
   */
  private async rebuild(goods: GoodsEntity, held: SaleStateHold): Promise<PreheatResult> {
    const after = await this.orders.lastRebuild(goods.id);
    let pending = this.pending.get(goods.id);
    if (pending === undefined || pending.after !== after) {
      await this.loader.forget(goods.id, { keepVoided: true });
      pending = { wipedAt: performance.now(), after };
      this.pending.set(goods.id, pending);
    }
    await this.ensureOrdersSettled(pending.wipedAt);
    // A queue sale's waiting room is suspect with the rest (lost, or an older copy): written
    // back from its journal before the sale is, so that the sale opens on the room MySQL holds.
    // Its wipe dropped the room as the journal's: no join placed after that (a restore that
    // must wait longer for the joins defers the rebuild, its barrier kept).
    if (hasWaitingRoom(goods)) {
      await this.queueRestore.restoreHeld(held);
    }
    // Its barrier is spent, whatever comes next: a load cut short is wiped by the next rebuild,
    // which waits for a barrier of its own.
    this.pending.delete(goods.id);
    const { history, result } = await this.orders.history(goods.id, async (history) => ({
      history,
      result: await this.load(goods, history.stock, history),
    }));
    this.logger.warn(
      `rebuilt from mysql: goods=${goods.id} stock=${result.stock} buyers=${history.buyers.length} cancelled=${history.cancelledOrderNos.length}`,
    );
    return result;
  }

  /**
   * Every order message the wiped copy had accepted must be written (or dropped for good) before
   * the sale is counted from MySQL. An order barrier (RedisBarrierStore) proves it for every message
   * the broker took before the barrier's own, so the barrier is opened once every such message
   * is in the broker: a purchase Redis accepted before the wipe (or the loss before it) had its
   * publish confirmed within PUBLISH_CONFIRM_TIMEOUT_MS, or it was answered 503 and voided. Only
   * that wait is fixed; the rest is the consumers settling what they hold.
   */
  private async ensureOrdersSettled(wipedAt: number): Promise<void> {
    const openAt = wipedAt + this.rabbitmq.publishConfirmTimeoutMs;
    const now = performance.now();
    if (now < openAt) {
      throw new UnavailableError(
        `Waiting ${Math.ceil(openAt - now)} ms more for purchases accepted before the loss to reach the broker`,
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
      `order barrier passed: id=${this.barrier!.id} ${Math.round(performance.now() - this.barrier!.openedAt)} ms after it opened`,
    );
  }

  /**
   * `history`: the sale's buyers and cancelled orders to load it with (none for a first load), or
   * `refresh` when this path found it loaded under the lock: then only its window and limit are
   * written, and nothing at all if Redis has lost it since (SaleLoaderStore.preheat).
   */
  private async load(
    goods: GoodsEntity,
    stock: number,
    history: SaleHistory | 'refresh',
  ): Promise<PreheatResult> {
    const result = await this.loader.preheat(
      goods.id,
      {
        totalStock: goods.totalStock,
        stock,
        startAt: goods.startAt,
        endAt: goods.endAt,
        perUserLimit: goods.perUserLimit,
        stockShards: goods.stockShards,
        admission: goods.admission,
      },
      history,
    );
    if (result.lost) {
      // Redis lost the sale after this load found it there: it reopens once rebuilt.
      this.logger.warn(`preheat found the sale gone from redis: goods=${goods.id}`);
      throw new UnavailableError(
        `Goods ${goods.id} left Redis while it was preheated; it reopens once rebuilt from MySQL`,
      );
    }
    if (result.loaded) this.logger.log(`preheated: goods=${goods.id} stock=${result.stock}`);
    return { goodsId: goods.id, stock: result.stock, loaded: result.loaded };
  }

  /**
   * Frees Redis of sales that ended more than `afterEndMs` ago (or no longer exist), once
   * nothing of theirs is in flight. Returns the goods ids it evicted.
   */
  async evictEnded(afterEndMs: number, now = Date.now()): Promise<number[]> {
    const preheated = await this.loader.preheatedSales();
    const known = new Map((await this.goods.findByIds(preheated)).map((g) => [g.id, g]));
    const evicted: number[] = [];
    for (const goodsId of preheated) {
      const goods = known.get(goodsId);
      if (goods && goods.endAt.getTime() + afterEndMs > now) continue;
      if (await this.loader.evict(goodsId)) {
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
