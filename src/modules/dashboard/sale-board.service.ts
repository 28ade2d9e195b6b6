import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { MerchantDeliveryService } from '../merchant-events/merchant-delivery.service.js';
import { MerchantEventRepository } from '../merchant-events/merchant-event.repository.js';
import { PaymentEventRepository } from '../payments/payment-event.repository.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import type { OrderStatus } from '../../infra/database/entities/order.entity.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { statusOf } from '../goods/goods.service.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import { parseVerdict, type SaleVerdict } from '../reconcile/reconcile-verdicts.store.js';
import { ReconcileService } from '../reconcile/reconcile.service.js';
import { BucketCountsStore } from '../sale-store/bucket-counts.store.js';
import { SaleRepairService } from '../sale-store/sale-repair.service.js';
import {
  QueueControlService,
  type DrawBoard,
  type QueueAdmission,
} from '../waiting-room/queue-control.service.js';
import { DashboardScripts } from './dashboard.scripts.js';
import type { ByStatus, DashboardSnapshot, QueueFigures, SaleFigures } from './dashboard.types.js';

/** "Recent": a sale that ended within this long is still shown (its orders still expire). */
export const RECENT_SALE_MS = 60 * 60_000;
/**
 * At most this many sales per snapshot, open ones first, then by newest start: the cost has a
 * ceiling.
 */
export const MAX_SALES = 12;
/** The chart's window: this many whole seconds, ending two seconds ago (see RateRecorderService). */
export const RATE_WINDOW_SECONDS = 180;
/** The last second shown; a second is in Redis once every instance flushed it (≤ 2 s later). */
const RATE_LAG_SECONDS = 2;
/** One reconcile per sale at most this often, for every instance together. */
export const VERDICT_REFRESH_MS = 5_000;
/** A store that does not answer within this leaves its part of one snapshot out. */
const PART_TIMEOUT_MS = 2_000;

interface SaleLedger {
  id: number;
  name: string;
  totalStock: number;
  dbStock: number;
  startAt: Date;
  endAt: Date;
  orders: ByStatus;
  units: ByStatus;
  /** A queue sale's admission as the operator set it; null for an open sale. */
  admission: QueueAdmission | null;
  /** A draw sale's terms; null for any other. */
  draw: Pick<DrawBoard, 'goodsId' | 'claimSeconds' | 'winnersFactor'> | null;
}

type RedisSide = Pick<
  SaleFigures,
  'verdict' | 'rates' | 'inFlight' | 'inFlightPurchases' | 'queue' | 'draw'
> & {
  stock: number | null;
};

const STATUS_FIELD: Record<OrderStatus, keyof ByStatus> = {
  PENDING_PAYMENT: 'pendingPayment',
  PAID: 'paid',
  CANCELLED: 'cancelled',
  REFUND_REQUIRED: 'refundRequired',
};

const STATUS_RANK = { ACTIVE: 0, SOLD_OUT: 0, UPCOMING: 1, ENDED: 2 } as const;

/**
 * Builds one dashboard snapshot of every open or recent sale: open now, opening within the preheat
 * lookahead, or ended within the last hour (at most MAX_SALES). The figures are the sale's, not
 * this instance's: one MySQL statement for all the listed sales (goods rows and orders grouped by
 * status, one consistent read) and two for their late payments and merchant events, one Lua call per sale in Redis (stock, in flight, the shared
 * reconcile verdict, the per-second answers every instance added), and the broker's queue
 * counters. A few reads per second in all, however many dashboards are open.
 */
@Injectable()
export class SaleBoardService {
  private readonly logger = new Logger(SaleBoardService.name);
  private readonly refreshing = new Set<number>();

  constructor(
    private readonly goods: GoodsRepository,
    private readonly scripts: DashboardScripts,
    private readonly publisher: OrderPublisher,
    private readonly reconcile: ReconcileService,
    private readonly buckets: BucketCountsStore,
    private readonly repair: SaleRepairService,
    private readonly queues: QueueControlService,
    private readonly paymentEvents: PaymentEventRepository,
    private readonly merchantEvents: MerchantEventRepository,
    private readonly merchantDelivery: MerchantDeliveryService,
    @InjectConfig(jobsConfig) private readonly jobs: JobsConfig,
  ) {}

  async build(now = Date.now()): Promise<DashboardSnapshot> {
    const problems: string[] = [];
    // MySQL first: an order landing between the two reads is then briefly counted in neither
    // place (sold reads one low for a second) rather than in both (one too many).
    const ledgers = await this.ledgers(now);
    const ids = ledgers.map((sale) => sale.id);
    const [latePayments, merchantEvents] = await Promise.all([
      this.paymentEvents.latePayments(ids),
      this.merchantDelivery.enabled ? this.merchantEvents.countsByGoods(ids) : null,
    ]);
    const [sides, queues] = await Promise.all([
      Promise.all(
        ledgers.map((sale) =>
          withTimeout(this.redisSide(sale, now), 'Redis').catch((error: Error) => {
            problems.push(`Redis, sale ${sale.id}: ${error.message}`);
            return null;
          }),
        ),
      ),
      withTimeout(this.publisher.queueStats(), 'RabbitMQ').catch((error: Error) => {
        problems.push(`RabbitMQ: ${error.message}`);
        return null;
      }),
    ]);
    const sales = ledgers.map((sale, index) => ({
      ...figures(sale, sides[index], now),
      latePayments: latePayments.get(sale.id) ?? { retaken: 0, refundRequired: 0 },
      merchantEvents: merchantEvents
        ? (merchantEvents.get(sale.id) ?? { pending: 0, delivered: 0, parked: 0 })
        : null,
    }));
    sales.sort((a, b) => STATUS_RANK[a.status] - STATUS_RANK[b.status]);
    return { at: now, sales, queues: queues satisfies QueueFigures[] | null, problems };
  }

  /** The listed sales' MySQL side in one statement (one consistent read in InnoDB). */
  private async ledgers(now: number): Promise<SaleLedger[]> {
    const rows = await this.goods.listedWithOrders({
      endedSince: new Date(now - RECENT_SALE_MS),
      startingBy: new Date(now + this.jobs.preheat.lookaheadMs),
      now: new Date(now),
      limit: MAX_SALES,
    });
    const sales = new Map<number, SaleLedger>();
    for (const row of rows) {
      const id = Number(row.id);
      let sale = sales.get(id);
      if (sale === undefined) {
        sale = {
          id,
          name: row.name,
          totalStock: Number(row.totalStock),
          dbStock: Number(row.stock),
          startAt: row.startAt,
          endAt: row.endAt,
          orders: { pendingPayment: 0, paid: 0, cancelled: 0, refundRequired: 0 },
          units: { pendingPayment: 0, paid: 0, cancelled: 0, refundRequired: 0 },
          admission:
            row.admission === 'queue'
              ? {
                  goodsId: id,
                  paused: Number(row.admissionPaused) === 1,
                  admitPerSecond: Number(row.admitPerSecond),
                  admissionTtlSeconds: Number(row.admissionTtlSeconds),
                }
              : null,
          draw:
            row.admission === 'draw'
              ? {
                  goodsId: id,
                  claimSeconds: Number(row.admissionTtlSeconds),
                  winnersFactor: Number(row.winnersFactor),
                }
              : null,
        };
        sales.set(id, sale);
      }
      if (row.status !== null) {
        sale.orders[STATUS_FIELD[row.status]] = Number(row.orders);
        sale.units[STATUS_FIELD[row.status]] = Number(row.units);
      }
    }
    return [...sales.values()];
  }

  private async redisSide(sale: SaleLedger, now: number): Promise<RedisSide> {
    const goodsId = sale.id;
    const last = Math.floor(now / 1000) - RATE_LAG_SECONDS;
    const start = last - RATE_WINDOW_SECONDS + 1;
    const { stock, inFlight, inFlightPurchases, rawVerdict, claimed, seconds } =
      await this.scripts.sale(goodsId, start, RATE_WINDOW_SECONDS, VERDICT_REFRESH_MS);
    if (claimed) this.refreshVerdict(goodsId);
    // A goods split over buckets: the call above read its goods-wide keys (verdict, rates); the
    // stock and what is in flight are the buckets' sum.
    const buckets =
      (await this.buckets.of(goodsId)) > 1 ? await this.repair.snapshot(goodsId) : null;
    return {
      stock: buckets ? buckets.stock : stock < 0 ? null : stock,
      inFlight: buckets ? buckets.inFlightQuantity : inFlight,
      inFlightPurchases: buckets ? buckets.inFlightCount : inFlightPurchases,
      verdict: parseVerdict(rawVerdict),
      rates: { start, codes: rateSeries(seconds) },
      queue: sale.admission ? await this.queues.board(sale.admission, sale.endAt) : null,
      draw: sale.draw ? await this.queues.drawBoard(sale.draw, sale.endAt) : null,
    };
  }

  /**
   * This instance won the sale's refresh claim: a confirmed reconcile, stored for every instance
   * (the snapshot after next shows it). Never awaited by the snapshot.
   */
  private refreshVerdict(goodsId: number): void {
    if (this.refreshing.has(goodsId)) return;
    this.refreshing.add(goodsId);
    this.reconcile
      .refreshVerdict(goodsId)
      .catch((error: Error) =>
        this.logger.warn(`dashboard verdict not refreshed: goods=${goodsId} ${error.message}`),
      )
      .finally(() => this.refreshing.delete(goodsId));
  }
}

/** The Lua call's seconds (flat {outcome, count, …} lists) as one series per outcome. */
export function rateSeries(seconds: string[][]): Record<string, number[]> {
  const codes: Record<string, number[]> = {};
  seconds.forEach((fields, index) => {
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const series = (codes[fields[i]] ??= new Array<number>(seconds.length).fill(0));
      series[index] = Number(fields[i + 1]);
    }
  });
  return codes;
}

function figures(
  sale: SaleLedger,
  redis: RedisSide | null,
  now: number,
): Omit<SaleFigures, 'latePayments' | 'merchantEvents'> {
  const stock = redis?.stock ?? null;
  const remaining = stock ?? sale.dbStock;
  const inFlight = redis?.inFlight ?? 0;
  return {
    id: sale.id,
    name: sale.name,
    totalStock: sale.totalStock,
    startAt: sale.startAt.toISOString(),
    endAt: sale.endAt.toISOString(),
    status: statusOf(sale, remaining, new Date(now)),
    remaining,
    preheated: stock !== null,
    sold: sale.units.pendingPayment + sale.units.paid + inFlight,
    inFlight,
    inFlightPurchases: redis?.inFlightPurchases ?? 0,
    dbStock: sale.dbStock,
    orders: sale.orders,
    units: sale.units,
    verdict: redis ? verdictNow(redis.verdict, redis.stock !== null) : null,
    rates: redis?.rates ?? { start: 0, codes: {} },
    queue: redis?.queue ?? null,
    draw: redis?.draw ?? null,
  };
}

/**
 * The stored verdict, unless Redis does not hold the sale now (read in the same call): then no
 * reading of it is consistent, whatever an earlier one found (taken before the loss, or saved
 * after the server came back empty).
 */
function verdictNow(verdict: SaleVerdict | null, loaded: boolean): SaleVerdict | null {
  if (loaded || verdict === null) return verdict;
  return {
    ...verdict,
    consistent: false,
    settling: false,
    redisState: 'NOT_LOADED',
    drift: { ...verdict.drift, redis: null },
  };
}

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${PART_TIMEOUT_MS} ms`)),
      PART_TIMEOUT_MS,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
