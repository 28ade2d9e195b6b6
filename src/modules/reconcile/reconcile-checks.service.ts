import { Injectable, Logger } from '@nestjs/common';
import { GoodsService } from '../goods/goods.service.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrdersService } from '../orders/orders.service.js';
import { SaleRepairService } from '../sale-store/sale-repair.service.js';
import {
  RECENT_CANCEL_WINDOW_MS,
  ReconcileService,
  type ReconcileReport,
} from './reconcile.service.js';

/** A cancel's Redis step normally follows its commit within milliseconds. */
const STALLED_RESTOCK_MS = 5_000;

/**
 * The reconcile job's work on each open sale: the stalled restocks finished, a confirmed
 * reading recorded in the metrics and as the sale's verdict, an error line on drift.
 */
@Injectable()
export class ReconcileChecksService {
  private readonly logger = new Logger(ReconcileChecksService.name);

  constructor(
    private readonly reconcile: ReconcileService,
    private readonly goods: GoodsService,
    private readonly orders: OrdersService,
    private readonly store: SaleRepairService,
    private readonly publisher: OrderPublisher,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * A reading confirmed over a few tries, recorded in the metrics and as the sale's shared
   * verdict; logs an error on drift.
   */
  async check(goodsId: number): Promise<ReconcileReport> {
    await this.finishStalledRestocks(goodsId);
    const { report, settling } = await this.reconcile.confirmedReading(goodsId);
    await this.reconcile.saveVerdict(report, settling);
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
    this.metrics.ordersByStatus.set(
      { goods, status: 'REFUND_REQUIRED' },
      report.orders.refundRequired,
    );
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
}
