import { inSpan, SpanKind, type Trace } from '../../infra/tracing/tracing.js';
import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter, isTransientDbError } from '../../common/database/transient-errors.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { TransactionsService, type Tx } from '../../infra/database/transactions.service.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { MerchantOutboxRepository } from './merchant-outbox.repository.js';
import { OrderRepository } from './order.repository.js';
import type { NewOrder } from '../messaging/order-message.js';
import type { WriteOutcome } from './order.types.js';
import { VoidedRequestsService } from './voided-requests.service.js';

class VersionConflict extends Error {}

/** Orders of the batch whose purchase was voided (VoidedRequestsService): the batch rolls back. */
class VoidedInBatch extends Error {
  constructor(readonly requestIds: Set<string>) {
    super(`voided purchases in the batch: ${[...requestIds].join(', ')}`);
  }
}

const MAX_VERSION_ATTEMPTS = 30;

interface MysqlError {
  code?: string;
  errno?: number;
  sqlMessage?: string;
  message?: string;
}

export function duplicateKeyIndex(error: unknown): string | null {
  const mysqlError = (error as { driverError?: MysqlError }).driverError ?? (error as MysqlError);
  if (mysqlError?.code !== 'ER_DUP_ENTRY') return null;
  const match = /for key '(?:[^.']*\.)?([^']+)'/.exec(
    mysqlError.sqlMessage ?? mysqlError.message ?? '',
  );
  return match?.[1] ?? 'unknown';
}

/**
 * Writes accepted purchases of one goods as orders: one version-checked stock UPDATE for the
 * whole batch plus one multi-row INSERT, in one transaction. Batching is what keeps optimistic
 * locking on a single hot row from turning into a retry storm (k writers, k-1 retries). A
 * purchase voided in MySQL (answered 503, or given up by an exhausted copy: see VoidedRequestsService)
 * is never written: one indexed read per batch, after the INSERT, excludes it.
 */
@Injectable()
export class OrderWriterService {
  private readonly logger = new Logger(OrderWriterService.name);

  constructor(
    private readonly transactions: TransactionsService,
    private readonly goods: GoodsRepository,
    private readonly orders: OrderRepository,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
    private readonly metrics: MetricsService,
    private readonly voided: VoidedRequestsService,
    private readonly outbox: MerchantOutboxRepository,
  ) {}

  /**
   * Redis's copy of this sale is behind MySQL (a step of the ingest skipped while Redis was
   * down): Redis must not sell it again before a rebuild from MySQL, which clears the mark.
   */
  async markRedisStale(goodsId: number): Promise<void> {
    await this.goods.markRedisStale(goodsId);
  }

  async writeBatch(goodsId: number, orders: NewOrder[], trace?: Trace): Promise<WriteOutcome[]> {
    if (trace === undefined) return this.write(goodsId, orders);
    return inSpan(
      'mysql write orders',
      trace,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'db.system.name': 'mysql',
          'db.collection.name': 'seckill_order',
          goods: goodsId,
        },
      },
      () => this.write(goodsId, orders),
    );
  }

  private async write(goodsId: number, orders: NewOrder[]): Promise<WriteOutcome[]> {
    const voided: WriteOutcome[] = [];
    let pending = orders;
    for (let attempt = 1; ; attempt++) {
      try {
        const outcomes = await this.transactions.run((tx) =>
          this.writeInTransaction(tx, goodsId, pending),
        );
        return voided.concat(outcomes);
      } catch (error) {
        if (error instanceof VoidedInBatch) {
          // Written again without them: the stock read and the UPDATE were the batch's whole.
          for (const order of pending) {
            if (error.requestIds.has(order.requestId)) voided.push({ kind: 'voided', order });
          }
          pending = pending.filter((order) => !error.requestIds.has(order.requestId));
          if (pending.length === 0) return voided;
          continue;
        }
        if (isTransientDbError(error) && attempt < MAX_VERSION_ATTEMPTS) {
          await sleep(backoffWithJitter(attempt, 5, 200));
          continue;
        }
        if (error instanceof VersionConflict && attempt < MAX_VERSION_ATTEMPTS) {
          this.metrics.versionConflicts.inc();
          // Jitter spreads competing writers apart so that one of them wins the next round.
          await sleep(Math.floor(Math.random() * Math.min(50, 2 * attempt)) + 1);
          continue;
        }
        const index = duplicateKeyIndex(error);
        if (index === null) throw error;
        return voided.concat(await this.afterDuplicateKey(goodsId, pending, index));
      }
    }
  }

  /**
   * A duplicate key rolled the batch back. Rows are then written one by one so that the one
   * that collides is told apart from the rest; MySQL's unique keys decide what it was.
   */
  private async afterDuplicateKey(
    goodsId: number,
    orders: NewOrder[],
    index: string,
  ): Promise<WriteOutcome[]> {
    if (orders.length > 1) {
      const outcomes: WriteOutcome[] = [];
      for (const order of orders) outcomes.push(...(await this.writeBatch(goodsId, [order])));
      return outcomes;
    }
    const [order] = orders;
    if (index === 'uq_order_active_buyer') {
      this.logger.warn(
        `order rejected: user ${order.userId} already holds goods ${goodsId} (request ${order.requestId})`,
      );
      return [{ kind: 'rejected', order, reason: 'ALREADY_PURCHASED' }];
    }
    // request_id or order_no: both are fixed per purchase, so the order is already there.
    return [{ kind: 'duplicate', order }];
  }

  private async writeInTransaction(
    tx: Tx,
    goodsId: number,
    orders: NewOrder[],
  ): Promise<WriteOutcome[]> {
    const existing = await this.orders.existingRequestIds(
      tx,
      orders.map((order) => order.requestId),
    );
    const outcomes: WriteOutcome[] = orders
      .filter((order) => existing.has(order.requestId))
      .map((order) => ({ kind: 'duplicate', order }));
    const fresh = orders.filter((order) => !existing.has(order.requestId));
    if (fresh.length === 0) return outcomes;

    const goods = await this.goods.stockAndVersion(tx, goodsId);
    if (!goods) {
      return outcomes.concat(
        fresh.map((order) => ({ kind: 'rejected', order, reason: 'GOODS_NOT_FOUND' as const })),
      );
    }

    const accepted: NewOrder[] = [];
    const refused: NewOrder[] = [];
    let taken = 0;
    for (const order of fresh) {
      if (taken + order.quantity <= goods.stock) {
        accepted.push(order);
        taken += order.quantity;
      } else {
        refused.push(order);
      }
    }

    // Also when every order is refused (taken = 0): the refusals rest on the stock read above,
    // which a cancel committed since (it bumps the version) may have made stale; the batch is
    // then retried on a fresh read instead of failing purchases MySQL can now take.
    if (!(await this.goods.takeStockAtVersion(tx, goodsId, taken, goods.version))) {
      throw new VersionConflict();
    }
    for (const order of refused) {
      // Redis sells only what it holds, so MySQL running short means the stores drifted.
      this.logger.error(
        `order rejected: goods ${goodsId} has no stock in MySQL for request ${order.requestId}`,
      );
      outcomes.push({ kind: 'rejected', order, reason: 'SOLD_OUT' });
    }
    if (accepted.length === 0) return outcomes;

    const timeoutMs = this.seckill.orderPaymentTimeoutMs;
    await this.orders.insertPending(
      tx,
      accepted.map((order) => ({
        orderNo: order.orderNo,
        requestId: order.requestId,
        userId: order.userId,
        goodsId,
        quantity: order.quantity,
        expireAt: new Date(order.acceptedAt + timeoutMs),
      })),
    );
    await this.outbox.append(
      tx,
      'order.created',
      accepted.map((order) => ({ ...order, goodsId })),
    );
    // After the INSERT, not before: the order rows written first are what a void recorded
    // meanwhile waits for (VoidedRequestsService explains the exclusion).
    const voided = await this.voided.voidedAmong(
      tx,
      accepted.map((order) => order.requestId),
    );
    if (voided.size > 0) throw new VoidedInBatch(voided);
    return outcomes.concat(accepted.map((order) => ({ kind: 'written', order })));
  }
}
