import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DomainError } from '../../common/errors/domain-error.js';
import { OrdersService } from '../orders/orders.service.js';
import { SaleRepairService } from '../sale-store/sale-repair.service.js';
import {
  ReconcileVerdictsStore,
  type RedisSaleState,
  type SaleVerdict,
} from './reconcile-verdicts.store.js';

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
  orders: { pendingPayment: number; paid: number; cancelled: number; refundRequired: number };
  inFlight: number;
  consistent: boolean;
  /** Units unaccounted for: total − (stock + active [+ in flight]); 0 when consistent. */
  drift: { redis: number | null; db: number };
}

export interface RepairReport {
  goodsId: number;
  /** The reading the repair found, under the goods' lock, read again while it showed drift. */
  before: ReconcileReport;
  /**
   * What that reading means: `settling` when cancels whose Redis restock is under way explain
   * its gap; `drifted` when Redis held the sale and nothing explains it (the repair corrected it).
   */
  found: { drifted: boolean; settling: boolean };
  after: ReconcileReport;
}

/** How many times an inconsistent reading is taken again before it counts as drift. */
const CONFIRM_READS = 3;
const CONFIRM_PAUSE_MS = 200;
/** Cancels recent enough that their restock may still be under way (or stalled). */
export const RECENT_CANCEL_WINDOW_MS = 10 * 60_000;

/**
 * Proves that MySQL and Redis agree: with active = pendingPayment + paid,
 * redisStock + active + inFlight == totalStock and dbStock + active == totalStock. The reading,
 * confirmed over a few tries, and the sale's shared verdict; the job's checks are
 * ReconcileChecksService', the repair ReconcileRepairService's.
 */
@Injectable()
export class ReconcileService {
  constructor(
    private readonly orders: OrdersService,
    private readonly store: SaleRepairService,
    private readonly verdicts: ReconcileVerdictsStore,
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
        refundRequired: quantities.REFUND_REQUIRED,
      },
      inFlight: redis.inFlightQuantity,
      consistent: redisState === 'LOADED' && redisDrift === 0 && dbDrift === 0,
      drift: { redis: redisDrift, db: dbDrift },
    };
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
  async confirmedReading(goodsId: number): Promise<{ report: ReconcileReport; settling: boolean }> {
    let report = await this.reconcile(goodsId);
    for (let read = 1; read < CONFIRM_READS && !report.consistent; read++) {
      await sleep(CONFIRM_PAUSE_MS);
      report = await this.reconcile(goodsId);
    }
    const settling = !report.consistent && (await this.explainedByRestocksUnderWay(report));
    return { report, settling };
  }

  async saveVerdict(report: ReconcileReport, settling: boolean): Promise<SaleVerdict> {
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

  /** The sale's verdict no longer holds (after a repair); the dashboard's next tick refreshes it. */
  forgetVerdict(goodsId: number): Promise<void> {
    return this.verdicts.forget(goodsId);
  }
}
