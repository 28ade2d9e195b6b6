import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DomainError } from '../../common/errors/domain-error.js';
import { GoodsService } from '../goods/goods.service.js';
import { OrderPublisher } from '../messaging/order-publisher.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrdersService } from '../orders/orders.service.js';
import { PreheatService } from '../preheat/preheat.service.js';
import { SaleStateLock } from '../sale-store/sale-state-lock.js';
import { SaleRepair } from '../sale-store/sale-repair.service.js';
import { ReconcileVerdicts, type RedisSaleState, type SaleVerdict } from './reconcile-verdicts.js';

export interface ReconcileReport {
  goodsId: number;
  totalStock: number;
  dbStock: number;
  /** null when Redis does not hold the sale */
  redisStock: number | null;
  /**
   * Whether Redis holds the sale (stock and meta of every bucket, what a purchase needs): a sale
   * NOT_LOADED (lost, wiped for a rebuild, never preheated) is never consistent.
   */
  redisState: RedisSaleState;
  buyers: number;
  orders: { pendingPayment: number; paid: number; cancelled: number };
  inFlight: number;
  consistent: boolean;
  /** Units unaccounted for: total − (stock + active [+ in flight]); 0 when consistent. */
  drift: { redis: number | null; db: number };
}

export interface RepairReport {
  goodsId: number;
  before: ReconcileReport;
  after: ReconcileReport;
}

/** How many times an inconsistent reading is taken again before it counts as drift. */
const CONFIRM_READS = 3;
const CONFIRM_PAUSE_MS = 200;
const RECENT_CANCEL_WINDOW_MS = 10 * 60_000;
/** A cancel's Redis step normally follows its commit within milliseconds. */
const STALLED_RESTOCK_MS = 5_000;

/**
 * Proves that MySQL and Redis agree: with active = pendingPayment + paid,
 * redisStock + active + inFlight == totalStock and dbStock + active == totalStock.
 */
@Injectable()
export class ReconcileService {
  private readonly logger = new Logger(ReconcileService.name);

  constructor(
    private readonly goods: GoodsService,
    private readonly orders: OrdersService,
    private readonly store: SaleRepair,
    private readonly preheat: PreheatService,
    private readonly publisher: OrderPublisher,
    private readonly metrics: MetricsService,
    private readonly verdicts: ReconcileVerdicts,
    private readonly saleLock: SaleStateLock,
  ) {}

  /**
   * One reading: Redis in one atomic script, then MySQL in one snapshot. An order that lands
   * between the two is counted both in flight and active, so a reading taken while orders land
   * can show drift that is not there; `check` reads again before it believes one.
   */
  async reconcile(goodsId: number): Promise<ReconcileReport> {
    const redis = await this.store.snapshot(goodsId);
    const ledger = await this.orders.ledger(goodsId);
    if (!ledger) throw new DomainError('GOODS_NOT_FOUND', `Goods ${goodsId} not found`);
    const { totalStock, stock: dbStock, quantities } = ledger;
    const active = quantities.PENDING_PAYMENT + quantities.PAID;
    const redisDrift =
      redis.stock === null ? null : totalStock - (redis.stock + active + redis.inFlightQuantity);
    const dbDrift = totalStock - (dbStock + active);
    const redisState: RedisSaleState = redis.stock === null ? 'NOT_LOADED' : 'LOADED';
    return {
      goodsId,
      totalStock,
      dbStock,
      redisStock: redis.stock,
      redisState,
      buyers: redis.buyersQuantity,
      orders: {
        pendingPayment: quantities.PENDING_PAYMENT,
        paid: quantities.PAID,
        cancelled: quantities.CANCELLED,
      },
      inFlight: redis.inFlightQuantity,
      consistent: redisState === 'LOADED' && redisDrift === 0 && dbDrift === 0,
      drift: { redis: redisDrift, db: dbDrift },
    };
  }

  /**
   * A reading confirmed over a few tries, recorded in the metrics and as the sale's shared
   * verdict; logs an error on drift.
   */
  async check(goodsId: number): Promise<ReconcileReport> {
    await this.finishStalledRestocks(goodsId);
    const { report, settling } = await this.confirmedReading(goodsId);
    await this.saveVerdict(report, settling);
    const goods = String(goodsId);
    this.metrics.reconcileDrift.set(
      { goods, store: 'redis' },
      report.drift.redis ?? report.totalStock,
    );
    this.metrics.reconcileDrift.set({ goods, store: 'mysql' }, report.drift.db);
    this.metrics.ordersByStatus.set(
      { goods, status: 'PENDING_PAYMENT' },
      report.orders.pendingPayment,
    );
    this.metrics.ordersByStatus.set({ goods, status: 'PAID' }, report.orders.paid);
    this.metrics.ordersByStatus.set({ goods, status: 'CANCELLED' }, report.orders.cancelled);
    if (settling) {
      this.logger.debug(`reconcile: goods=${goodsId} restocks under way, not drift`);
    } else if (!report.consistent) {
      this.logger.error(
        `reconcile drift: goods=${goodsId} redis=${report.redisState} redisDrift=${report.drift.redis} dbDrift=${report.drift.db} ` +
          `redisStock=${report.redisStock} dbStock=${report.dbStock} inFlight=${report.inFlight} ` +
          `active=${report.orders.pendingPayment + report.orders.paid} total=${report.totalStock}`,
      );
    }
    return report;
  }

  /**
   * Refreshes the sale's shared verdict (for the dashboard): a confirmed reading, without the
   * job's repairs, metrics and log lines.
   */
  async refreshVerdict(goodsId: number): Promise<SaleVerdict> {
    const { report, settling } = await this.confirmedReading(goodsId);
    return this.saveVerdict(report, settling);
  }

  /**
   * A reading, taken again (a few times, a moment apart) while it shows a drift: an order landing
   * between the Redis and the MySQL read looks like one. `settling`: what is left is explained by
   * cancels whose Redis restock is under way.
   */
  private async confirmedReading(
    goodsId: number,
  ): Promise<{ report: ReconcileReport; settling: boolean }> {
    let report = await this.reconcile(goodsId);
    for (let read = 1; read < CONFIRM_READS && !report.consistent; read++) {
      await sleep(CONFIRM_PAUSE_MS);
      report = await this.reconcile(goodsId);
    }
    const settling = !report.consistent && (await this.explainedByRestocksUnderWay(report));
    return { report, settling };
  }

  private async saveVerdict(report: ReconcileReport, settling: boolean): Promise<SaleVerdict> {
    const verdict: SaleVerdict = {
      consistent: report.consistent || settling,
      settling,
      redisState: report.redisState,
      drift: report.drift,
      checkedAt: Date.now(),
    };
    await this.verdicts.save(report.goodsId, verdict);
    return verdict;
  }

  /**
   * During a wave of cancellations each reading can fall between a cancel's MySQL commit and
   * its Redis restock (the Redis side then looks short by that order). True when exactly the
   * quantity of recent cancels that Redis has not restocked yet accounts for the gap.
   */
  private async explainedByRestocksUnderWay(report: ReconcileReport): Promise<boolean> {
    if (report.drift.db !== 0 || report.drift.redis === null || report.drift.redis <= 0) {
      return false;
    }
    const recent = await this.orders.recentlyCancelled(report.goodsId, RECENT_CANCEL_WINDOW_MS);
    const pending = await this.store.notYetRestocked(
      report.goodsId,
      recent.map((order) => order.orderNo),
    );
    const pendingQuantity = recent
      .filter((order) => pending.has(order.orderNo))
      .reduce((sum, order) => sum + order.quantity, 0);
    return pendingQuantity === report.drift.redis;
  }

  /**
   * A cancel whose Redis step failed (Redis was down just then) leaves the stock short in Redis;
   * nothing else would retry it. Orders cancelled a while ago that Redis has not restocked get
   * their stock back now (restock is idempotent per order number).
   */
  private async finishStalledRestocks(goodsId: number): Promise<void> {
    const recent = await this.orders.recentlyCancelled(
      goodsId,
      RECENT_CANCEL_WINDOW_MS,
      STALLED_RESTOCK_MS,
    );
    if (recent.length === 0) return;
    const pending = await this.store.notYetRestocked(
      goodsId,
      recent.map((order) => order.orderNo),
    );
    for (const order of recent.filter((candidate) => pending.has(candidate.orderNo))) {
      await this.store.restock(goodsId, order.orderNo, order.userId, order.quantity);
      this.logger.warn(`finished a stalled stock return: order=${order.orderNo} goods=${goodsId}`);
    }
  }

  /** Checks every sale that is open now, and records the queues' depths. */
  async checkActiveSales(): Promise<ReconcileReport[]> {
    const reports: ReconcileReport[] = [];
    for (const sale of await this.goods.startingBefore(new Date())) {
      reports.push(await this.check(sale.id));
    }
    for (const [queue, depth] of Object.entries(await this.publisher.queueDepths())) {
      this.metrics.queueDepth.set({ queue }, depth);
    }
    return reports;
  }

  /**
   * Rebuilds the sale's Redis stock and buyers from MySQL's active orders plus what is still in
   * flight (see lua/seckill-rebuild.lua: safe while the sale runs). A goods split over several
   * buckets answers 503 to its purchases for the moment its buckets are rebuilt
   * (SaleRepair.rebuild). Under the goods' sale-state lock: 503 while a rebuild, a wipe or the
   * fallback's return of the sale holds it.
   */
  async repair(goodsId: number): Promise<RepairReport> {
    const before = await this.reconcile(goodsId);
    const rebuilt = await this.saleLock.hold(goodsId, 'repair', async (held) => {
      const goods = await this.goods.findOrThrow(goodsId);
      // Makes sure the window and limit are in Redis (and the stock, if Redis lost the sale),
      // under the lock the rebuild below needs too: no wipe or rebuild runs in between.
      await this.preheat.preheatHeld(held);
      const since = await this.store.serverTimeMs(goodsId);
      return this.orders.history(goodsId, (history) =>
        this.store.rebuild(
          goodsId,
          goods.totalStock,
          since,
          history.activeOrders,
          history.cancelledOrderNos,
        ),
      );
    });
    if (!rebuilt) throw new DomainError('NOT_PREHEATED', 'The sale could not be loaded into Redis');
    this.logger.warn(
      `redis rebuilt from mysql: goods=${goodsId} stock ${String(before.redisStock)} -> ${rebuilt.stock} buyers=${rebuilt.buyerCount}`,
    );
    // The verdict before the repair no longer holds; the dashboard's next tick refreshes it.
    await this.verdicts.forget(goodsId);
    return { goodsId, before, after: await this.reconcile(goodsId) };
  }
}
