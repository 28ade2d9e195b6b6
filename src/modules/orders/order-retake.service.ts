import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter, isTransientDbError } from '../../common/database/transient-errors.js';
import { UnavailableError } from '../../common/errors/domain-error.js';
import type { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { jobsConfig, type JobsConfig } from '../../config/jobs.config.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { TransactionsService, type Tx } from '../../infra/database/transactions.service.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { PurchaseLedgerStore, RetakeCode } from '../sale-store/purchase-ledger.store.js';
import type { PaymentResult, RecordPayment } from './order-payment.types.js';
import { MerchantOutboxRepository } from './merchant-outbox.repository.js';
import { OrderRepository } from './order.repository.js';

const MAX_TRANSIENT_RETRIES = 10;

/** The Redis answers after which the order holds its unit there. */
const HELD_IN_REDIS = new Set([RetakeCode.Retaken, RetakeCode.Kept, RetakeCode.Already]);

/**
 * A payment that landed after its order was cancelled (docs/payments.md, "Late payments"). The
 * order takes a unit again if the sale has one, in both stores, or becomes REFUND_REQUIRED.
 *
 * One MySQL transaction decides, holding the goods row (FOR UPDATE) from the start: every other
 * writer of the goods' stock (the order writer, the database-mode sale, a cancel) and the rebuild
 * of Redis from MySQL wait for it. Under that lock MySQL is asked first (stock left, the buyer
 * holds no other order), then Redis takes the unit (lua/seckill-retake.lua: the stock Redis sells
 * from, and the buyer's in-flight purchases MySQL cannot see yet; in a goods split over buckets,
 * borrowed from another bucket when the buyer's home bucket is short: PurchaseLedgerStore.retake),
 * then MySQL follows and commits.
 * Redis goes first because it is what sells: a unit MySQL took while Redis still offered it would
 * be sold twice. If MySQL never commits (a crash, a lost connection), Redis holds a unit for a
 * cancelled order: it undersells, never oversells, and the provider's retry of the event (it was
 * not recorded) finds the unit taken already and commits. A rebuild from MySQL counts the retake
 * too (its record in Redis), so that a commit after the rebuild's snapshot is not sold twice.
 *
 * A sale Redis does not hold is decided by MySQL alone only once it was evicted (ended longer ago
 * than the payment timeout and the keys' retention: nothing of it can be in flight). Otherwise
 * Redis lost it (a restart, a failover, a fallback under way) and may have accepted purchases
 * that are not in MySQL yet, the buyer's own among them: the event is answered 503 and the
 * provider sends it again once the sale is rebuilt.
 */
@Injectable()
export class OrderRetakeService {
  private readonly logger = new Logger(OrderRetakeService.name);
  private readonly evictedAfterMs: number;

  constructor(
    private readonly transactions: TransactionsService,
    private readonly orders: OrderRepository,
    private readonly goods: GoodsRepository,
    private readonly ledger: PurchaseLedgerStore,
    private readonly metrics: MetricsService,
    private readonly outbox: MerchantOutboxRepository,
    @InjectConfig(seckillConfig) seckill: SeckillConfig,
    @InjectConfig(jobsConfig) jobs: JobsConfig,
  ) {
    // The eviction drops a sale's keys only this long after its end (PreheatCron).
    this.evictedAfterMs = seckill.orderPaymentTimeoutMs + jobs.saleEviction.keysRetentionMs;
  }

  /** null: the order is no longer CANCELLED at `order.version` (read it again). */
  async settle(order: OrderEntity, record: RecordPayment): Promise<PaymentResult | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.settleOnce(order, record);
        if (result) this.logSettled(order, result);
        return result;
      } catch (error) {
        // A deadlock rolls the whole transaction back; Redis's step is idempotent by order.
        if (!isTransientDbError(error) || attempt >= MAX_TRANSIENT_RETRIES) throw error;
        await sleep(backoffWithJitter(attempt, 5, 200));
      }
    }
  }

  private settleOnce(order: OrderEntity, record: RecordPayment): Promise<PaymentResult | null> {
    return this.transactions.run(async (tx) => {
      const stock = await this.goods.lockStock(tx, order.goodsId);
      const current = await this.orders.lockById(tx, order.id);
      if (current?.status !== 'CANCELLED' || current.version !== order.version) return null;
      const mysqlHasRoom =
        stock !== null &&
        stock >= order.quantity &&
        !(await this.orders.holdsAnother(tx, order.goodsId, order.userId, order.id));
      const code = mysqlHasRoom
        ? await this.ledger.retake(order.goodsId, 'take', order)
        : RetakeCode.SoldOut;
      if (code === RetakeCode.Frozen) {
        throw new UnavailableError(
          `A repair is counting goods ${order.goodsId}; the payment is taken again shortly`,
        );
      }
      if (code === RetakeCode.LoanVoided) {
        // The unit borrowed from another bucket was given back by the loan sweeper before the
        // home bucket recorded it (this attempt was slow): the provider's retry borrows again.
        throw new UnavailableError(
          `The unit borrowed for order ${order.orderNo} was given back meanwhile; send the event again`,
        );
      }
      const evicted =
        code === RetakeCode.NotPreheated &&
        (await this.goods.endedBefore(tx, order.goodsId, this.evictedAfterMs));
      if (code === RetakeCode.NotPreheated && !evicted) {
        throw new UnavailableError(
          `Goods ${order.goodsId} is not in Redis now (being rebuilt): send the event again shortly`,
        );
      }
      if (HELD_IN_REDIS.has(code) || evicted) {
        // Checked above under the row's lock: these cannot refuse.
        if (!(await this.goods.takeStockIfLeft(tx, order.goodsId, order.quantity))) {
          throw new Error(`goods ${order.goodsId}: the stock checked under its lock changed`);
        }
        await this.move(tx, order, 'PAID');
        const result: PaymentResult = { status: 'PAID', outcome: 'retaken' };
        await record(tx, result);
        return result;
      }
      // None left (or the buyer holds another order): whatever an earlier attempt took in Redis
      // for this order is given back, and the refund is asked for.
      await this.ledger.retake(order.goodsId, 'give-back', order);
      await this.move(tx, order, 'REFUND_REQUIRED');
      const result: PaymentResult = { status: 'REFUND_REQUIRED', outcome: 'refund_required' };
      await record(tx, result);
      return result;
    });
  }

  private async move(tx: Tx, order: OrderEntity, to: 'PAID' | 'REFUND_REQUIRED'): Promise<void> {
    if (!(await this.orders.settleLatePayment(tx, order.id, order.version, to))) {
      throw new Error(`order ${order.orderNo}: its row changed under its lock`);
    }
    await this.outbox.append(tx, to === 'PAID' ? 'order.paid' : 'order.refund_required', [order]);
  }

  private logSettled(order: OrderEntity, result: PaymentResult): void {
    const ids = `order=${order.orderNo} user=${order.userId} goods=${order.goodsId} quantity=${order.quantity}`;
    if (result.status === 'PAID') {
      this.logger.warn(`late payment took its unit again: ${ids}`);
    } else {
      this.logger.warn(`late payment found no unit left, refund required: ${ids}`);
    }
    this.metrics.orderTransitions.inc({ to: result.status });
  }
}
