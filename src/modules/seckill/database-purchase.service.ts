import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  DomainError,
  orUnavailable,
  UnavailableError,
  UnknownOutcomeError,
} from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { availabilityConfig, type AvailabilityConfig } from '../../config/availability.config.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { TransactionsService } from '../../infra/database/transactions.service.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { newOrderNo } from '../orders/order-no.js';
import { MerchantOutboxRepository } from '../orders/merchant-outbox.repository.js';
import { OrderRepository } from '../orders/order.repository.js';
import { duplicateKeyIndex } from '../orders/order-writer.service.js';
import type { PurchaseTicket } from '../availability/purchase-ticket.js';
import type { PurchaseAccepted, PurchaseStrategy } from './purchase.types.js';
import { FallbackGateService, MARKS_LEASE_MS } from '../fallback/fallback-gate.service.js';

/**
 * The longest the fallback answers a sold-out goods from memory (SOLD_OUT_MEMO_MS, 0 = off): a
 * cancel while Redis is down puts stock back in MySQL and announces it nowhere, so the memo's
 * life alone bounds how long this instance misses it.
 */
const MAX_SOLD_OUT_MEMO_MS = 1_000;

/** The conditional UPDATE took nothing: why (read after the rollback). */
type Refusal = DomainError | 'closed' | 'again';

/** Covers a hold's UPDATE running before its commit, which is when other instances can read it. */
const HOLD_SLACK_MS = 250;

/** Tries of one purchase whose goods row changed between its UPDATE and the read of why. */
const MAX_TRIES = 3;

class NotTaken extends Error {}

/**
 * A purchase decided by MySQL alone, while Redis is unreachable or the sale is being rebuilt
 * (REDIS_DOWN_MODE=database). One transaction: the conditional stock UPDATE (the gate open, the
 * window and the per-user limit from the goods row, `stock >= q`), then the order INSERT, which
 * the unique active-order index refuses for a buyer who already holds the goods. The UPDATE comes
 * first so that it takes the goods row's lock: the rebuild's `SELECT … FOR UPDATE` of that row
 * waits for every fallback purchase under way, and one that comes after finds the gate closed.
 *
 * The order is written as the consumer writes one (PENDING_PAYMENT, same order number scheme,
 * expire_at from ORDER_PAYMENT_TIMEOUT_MS), so the result and order routes find it, and its
 * payment timeout message is published as the consumer publishes it; if that publish fails, the
 * expiry sweep cancels it once overdue.
 *
 * Bounded: at most FALLBACK_MAX_INFLIGHT at once on this instance (more are 503 at once, before
 * any query), and a goods found sold out is answered SOLD_OUT from memory for SOLD_OUT_MEMO_MS, at
 * most a second (see MAX_SOLD_OUT_MEMO_MS).
 *
 * One clock: the sale window and the payment deadline are MySQL's NOW(3) (sessions are UTC, as
 * the columns are; see DatabaseModule), not this host's, which may disagree with the Redis path's
 * and the expiry's.
 */
@Injectable()
export class DatabasePurchaseService implements PurchaseStrategy {
  private readonly logger = new Logger(DatabasePurchaseService.name);
  private inflight = 0;
  /** Goods found sold out, until when. */
  private readonly soldOut = new Map<number, number>();

  constructor(
    private readonly transactions: TransactionsService,
    private readonly goods: GoodsRepository,
    private readonly orders: OrderRepository,
    private readonly outbox: MerchantOutboxRepository,
    private readonly gate: FallbackGateService,
    private readonly publisher: OrderPublisher,
    private readonly metrics: MetricsService,
    @InjectConfig(availabilityConfig) private readonly availability: AvailabilityConfig,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
  ) {}

  /**
   * A purchase of the goods went elsewhere (its ticket's route is not MySQL): what the fallback
   * found sold out no longer says anything.
   */
  backOnRedis(goodsId: number): void {
    if (this.soldOut.size > 0) this.soldOut.delete(goodsId);
  }

  async purchase(
    { goodsId }: PurchaseTicket,
    userId: number,
    quantity: number,
  ): Promise<PurchaseAccepted> {
    const until = this.soldOut.get(goodsId);
    if (until !== undefined) {
      if (Date.now() < until) throw new DomainError('SOLD_OUT', 'Sold out');
      this.soldOut.delete(goodsId);
    }
    if (this.inflight >= this.availability.fallbackMaxInflight) {
      this.metrics.fallbackRefusals.inc({ reason: 'busy' });
      throw new UnavailableError(
        'Too many purchases at once while Redis is down; nothing was taken',
      );
    }
    this.inflight++;
    this.metrics.fallbackInflight.inc();
    try {
      return await orUnavailable('MySQL', () => this.sell(goodsId, userId, quantity));
    } finally {
      this.inflight--;
      this.metrics.fallbackInflight.dec();
    }
  }

  private async sell(goodsId: number, userId: number, quantity: number): Promise<PurchaseAccepted> {
    const acceptedAt = Date.now();
    const order = { requestId: randomUUID(), orderNo: newOrderNo(acceptedAt) };
    let refusal: Refusal | null = 'again';
    for (let tries = 0; refusal === 'again' && tries < MAX_TRIES; tries++) {
      refusal = await this.tryOnce(goodsId, userId, quantity, order);
      if (
        refusal === 'closed' &&
        this.gate.redisDown(goodsId) &&
        (await this.openWhenHeld(goodsId))
      ) {
        refusal = 'again';
      }
    }
    if (refusal === 'closed' || refusal === 'again') {
      this.metrics.fallbackRefusals.inc({ reason: 'closed' });
      throw new UnavailableError(
        'Redis is unavailable and the orders it accepted are not all written yet; nothing was taken',
      );
    }
    if (refusal) throw refusal;
    this.logger.debug(
      `fallback purchase: request=${order.requestId} order=${order.orderNo} quantity=${quantity}`,
    );
    void this.publisher.publishTimeouts([{ orderNo: order.orderNo, goodsId }]).then((sent) => {
      if (!sent) {
        this.logger.warn(`payment timeout left to the expiry sweep: order=${order.orderNo}`);
      }
    });
    return { status: 'QUEUED', requestId: order.requestId };
  }

  /** One transaction; null when the order is written, else why nothing was taken. */
  private async tryOnce(
    goodsId: number,
    userId: number,
    quantity: number,
    order: { requestId: string; orderNo: string },
  ): Promise<Refusal | null> {
    // Set once both statements ran: what fails after it is the COMMIT, which may have applied.
    let committing = false;
    try {
      await this.transactions.run(async (tx) => {
        if (!(await this.goods.takeStockThroughFallback(tx, goodsId, quantity))) {
          throw new NotTaken();
        }
        await this.orders.insertPending(tx, [
          {
            ...order,
            userId,
            goodsId,
            quantity,
            expireAt: { afterMs: this.seckill.orderPaymentTimeoutMs },
          },
        ]);
        await this.outbox.append(tx, 'order.created', [{ ...order, userId, goodsId, quantity }]);
        committing = true;
      });
      return null;
    } catch (error) {
      if (committing) {
        this.logger.warn(
          `fallback commit unanswered, outcome unknown: request=${order.requestId} goods=${goodsId} user=${userId}`,
        );
        throw new UnknownOutcomeError(
          order.requestId,
          'MySQL did not answer the commit of this purchase: it may have been taken; its result will tell',
          error,
        );
      }
      if (error instanceof NotTaken) return this.whyNotTaken(goodsId, quantity);
      if (duplicateKeyIndex(error) === 'uq_order_active_buyer') {
        return new DomainError('ALREADY_PURCHASED', 'You already hold this goods');
      }
      throw error;
    }
  }

  private async whyNotTaken(goodsId: number, quantity: number): Promise<Refusal> {
    const goods = await this.goods.fallbackSaleState(goodsId);
    if (!goods) return new DomainError('GOODS_NOT_FOUND', `Goods ${goodsId} not found`);
    if (goods.queue) {
      return new UnavailableError(
        'This sale admits buyers through its waiting room, which lives in Redis: it is not sold while Redis is unavailable; nothing was taken',
      );
    }
    if (goods.notStarted) {
      return new DomainError('SALE_NOT_STARTED', 'The sale has not started yet');
    }
    if (goods.ended) return new DomainError('SALE_ENDED', 'The sale has ended');
    if (quantity > goods.perUserLimit) {
      return new DomainError('VALIDATION_FAILED', 'quantity is above the per-user limit');
    }
    if (!goods.fallbackOpen) return 'closed';
    // Opened, or stock given back, since the UPDATE: try again.
    if (goods.stock >= quantity) return 'again';
    const memoMs = Math.min(this.seckill.soldOutMemoMs, MAX_SOLD_OUT_MEMO_MS);
    if (goods.stock === 0 && memoMs > 0) this.soldOut.set(goodsId, Date.now() + memoMs);
    return new DomainError('SOLD_OUT', 'Sold out');
  }

  /**
   * Opening a goods to the fallback, in two steps, so that no instance sells it through Redis
   * once MySQL does. First it is held (`redis_stale`, `fallback_held_at`): every instance that
   * reads the marks stops selling it through Redis within a read, and one that cannot read them
   * stops selling through Redis at all when its lease runs out (FallbackGateService, MARKS_LEASE_MS).
   * A purchase Redis accepted before that is in the broker within PUBLISH_CONFIRM_TIMEOUT_MS, or
   * was answered 503. Once that wait is over, an order barrier opened after it proves those
   * orders written, and MySQL's stock counts them: the goods is opened (`fallback_open`), unless
   * a rebuild brought it back to Redis meanwhile (which clears the hold). Until then 503, nothing
   * taken. True when the goods is open now (here or by another instance): try again.
   */
  private async openWhenHeld(goodsId: number): Promise<boolean> {
    const heldAt = await this.hold(goodsId);
    if (heldAt === 'open') return true;
    if (heldAt === null) return false;
    const fence = this.gate.fenceOpenedAt(heldAt + this.holdBeforeOpenMs());
    if (!fence) return false;
    if (await this.goods.openToFallback(goodsId, fence, this.holdBeforeOpenMs())) {
      this.logger.warn(`sale opened to the database fallback: goods=${goodsId}`);
    }
    return true;
  }

  /**
   * Holds the goods from the Redis path (once per outage: the first hold's time stands) and
   * returns when that was (MySQL's clock, epoch ms); 'open' when the fallback is open already,
   * null when the goods is gone.
   */
  private async hold(goodsId: number): Promise<number | 'open' | null> {
    await this.goods.holdFromRedis(goodsId);
    this.gate.opened(goodsId);
    const hold = await this.goods.fallbackHold(goodsId);
    if (!hold) return null;
    if (hold.open) return 'open';
    return hold.heldAt === null ? null : hold.heldAt.getTime();
  }

  /** From a goods' hold to the earliest barrier that may open it (see openWhenHeld). */
  private holdBeforeOpenMs(): number {
    return MARKS_LEASE_MS + this.rabbitmq.publishConfirmTimeoutMs + HOLD_SLACK_MS;
  }
}
