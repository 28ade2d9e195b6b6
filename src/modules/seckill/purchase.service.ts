import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InjectConfig } from '../../config/app-config.js';
import { FaultInjector } from '../../config/fault-injector.js';
import type { AppConfig } from '../../config/env.validation.js';
import { neverSent } from '../../common/errors/dependency-errors.js';
import {
  DomainError,
  orUnavailable,
  UnavailableError,
  UnknownOutcomeError,
} from '../../common/errors/domain-error.js';
import { RedisLocks } from '../../infra/redis/redis-locks.js';
import { GoodsService } from '../goods/goods.service.js';
import { encodeOrderMessage } from '../messaging/order-message.js';
import { OrderPublisher } from '../messaging/order-publisher.service.js';
import { newOrderNo } from '../orders/order-no.js';
import type { NewOrder } from '../orders/order.types.js';
import { VoidedRequests } from '../orders/voided-requests.service.js';
import { MetricsService, type PurchaseMode } from '../metrics/metrics.service.js';
import { deductRefusal } from '../sale-store/deduct-refusals.js';
import { DeductCode, PurchaseLedger, ReleaseCode } from '../sale-store/purchase-ledger.service.js';
import type { PurchaseAccepted } from './purchase.types.js';
import { PurchaseAvailability } from '../availability/purchase-availability.service.js';

/**
 * The purchase itself: the per-user lock, the atomic deduct in Redis, the confirmed publish, and
 * the void of a purchase whose publish is an unknown outcome (in MySQL, then Redis).
 */
@Injectable()
export class PurchaseService {
  private readonly logger = new Logger(PurchaseService.name);

  constructor(
    private readonly ledger: PurchaseLedger,
    private readonly locks: RedisLocks,
    private readonly publisher: OrderPublisher,
    private readonly goods: GoodsService,
    private readonly metrics: MetricsService,
    private readonly faults: FaultInjector,
    @InjectConfig() private readonly config: AppConfig,
    private readonly availability: PurchaseAvailability,
    private readonly voids: VoidedRequests,
  ) {}

  async purchase(goodsId: number, userId: number, quantity: number): Promise<PurchaseAccepted> {
    // Redis unreachable, being rebuilt, or behind MySQL for this sale: MySQL decides (or 503).
    const route = this.availability.route(goodsId);
    const mode: PurchaseMode = route === 'database' ? 'database' : 'redis';
    try {
      if (route === 'unavailable') throw rebuilding();
      const accepted =
        mode === 'database'
          ? await this.availability.sellThroughDatabase(goodsId, userId, quantity)
          : await this.purchaseOnce(goodsId, userId, quantity);
      this.metrics.countPurchase(goodsId, 'ACCEPTED', mode);
      return accepted;
    } catch (error) {
      this.metrics.countPurchase(
        goodsId,
        error instanceof DomainError ? error.code : 'INTERNAL_ERROR',
        mode,
      );
      throw error;
    }
  }

  private async purchaseOnce(
    goodsId: number,
    userId: number,
    quantity: number,
  ): Promise<PurchaseAccepted> {
    // The bucket count: read once per goods and instance (Redis meta, else MySQL), then from memory.
    const home = await orUnavailable('Redis or MySQL', () => this.ledger.homeKeys(goodsId, userId));
    if (this.availability.rebuilding(goodsId)) throw rebuilding();
    // Asked again now that the bucket count is known: the first purchase of a goods with stock
    // buckets on this instance was judged by its goods-wide keys' master alone, and a master
    // holding one of its buckets may be held from the Redis path. The retry is decided whole.
    if (this.availability.heldFromRedis(goodsId)) {
      throw new UnavailableError('Part of this sale is held from Redis; nothing was taken');
    }
    if (!this.publisher.isReady()) {
      throw new UnavailableError('The order queue is unavailable; nothing was taken');
    }
    const lock = await orUnavailable('Redis', () =>
      this.locks.tryLockPurchase(home, userId, this.config.purchaseLockTtlMs),
    );
    if (!lock) {
      throw new DomainError(
        'DUPLICATE_REQUEST',
        'Another purchase of this goods by you is in progress',
      );
    }
    let confirmed: string | undefined;
    try {
      const outcome = await this.purchaseLocked(goodsId, userId, quantity);
      if (outcome.confirmed) confirmed = outcome.accepted.requestId;
      return outcome.accepted;
    } finally {
      // Not awaited: the answer need not wait for Redis to drop the lock (and, once the broker
      // confirmed the message, the outbox entry with it: the sweeper has nothing to resend). The
      // release is sent at once on this instance's one connection, so the same buyer's next
      // click here reaches Redis after it; a lost release expires with PURCHASE_LOCK_TTL_MS.
      void lock.release(confirmed);
    }
  }

  private async purchaseLocked(
    goodsId: number,
    userId: number,
    quantity: number,
  ): Promise<{ accepted: PurchaseAccepted; confirmed: boolean }> {
    const acceptedAt = Date.now();
    const order: NewOrder = {
      requestId: randomUUID(),
      orderNo: newOrderNo(acceptedAt),
      userId,
      goodsId,
      quantity,
      acceptedAt,
    };
    let code: DeductCode;
    try {
      ({ code } = await this.ledger.deduct(
        goodsId,
        userId,
        quantity,
        order.requestId,
        encodeOrderMessage(order),
      ));
    } catch (error) {
      return { accepted: await this.afterFailedDeduct(order, error), confirmed: false };
    }
    if (code !== DeductCode.Accepted && code !== DeductCode.Replayed) {
      throw deductRefusal(code) ?? (await this.notPreheated(goodsId));
    }
    this.faults.crashPoint('after-deduct');
    // Held from the Redis path while Redis took it (another instance is opening the sale to
    // MySQL, or this one's marks are past their lease): a 202 now could be refused by MySQL once
    // the fallback sells. Nothing is published yet, so giving it back in Redis settles it.
    if (this.availability.heldFromRedis(goodsId)) {
      return { accepted: await this.afterHeldDeduct(order), confirmed: false };
    }

    const accepted: PurchaseAccepted = { status: 'QUEUED', requestId: order.requestId };
    if (await this.publisher.publish(order)) {
      // Ties the HTTP request (its reqId, userId, goodsId) to the purchase's id, which the
      // consumer's lines name. Debug: at info it would be a line per purchase.
      this.logger.debug(`purchase accepted: request=${order.requestId} quantity=${quantity}`);
      return { accepted, confirmed: true };
    }

    return { accepted: await this.afterUnconfirmedPublish(order), confirmed: false };
  }

  /**
   * The broker did not confirm: the message may be lost, or held on its way and delivered later.
   * The void is recorded in MySQL first, where neither a Redis restart nor Redis being down (a
   * database-mode consumer writes without Redis) loses it, and where it and the order's write
   * exclude each other (VoidedRequests). Once it is committed nothing is taken, whatever Redis
   * answers next: the release only gives the stock back now rather than when the message comes.
   */
  private async afterUnconfirmedPublish(order: NewOrder): Promise<PurchaseAccepted> {
    const { goodsId, userId, requestId } = order;
    let recorded: 'voided' | 'ordered';
    try {
      recorded = await this.voids.record(requestId, goodsId);
    } catch (error) {
      // Voided nowhere: the purchase stays in flight in Redis, its message in the broker or in
      // the outbox the sweeper resends, so most likely an order; lost if Redis loses the outbox
      // before the sweeper resends it. "Nothing was taken" cannot be said.
      this.logger.warn(
        `purchase neither confirmed nor voided, outcome unknown: request=${requestId} goods=${goodsId} user=${userId}`,
      );
      throw new UnknownOutcomeError(
        requestId,
        'The order queue did not confirm and MySQL did not record the void: this purchase may still become an order; its result will tell',
        error,
      );
    }
    // A consumer wrote it (the message arrived after all): it is an order.
    if (recorded === 'ordered') return { status: 'QUEUED', requestId };
    try {
      // Refused while a consumer holds the claim: that one finds the void and gives it back.
      await this.ledger.release(goodsId, requestId, 'UNAVAILABLE', false, userId);
    } catch {
      this.logger.warn(
        `voided purchase left in flight in redis, its message settles it: request=${requestId} goods=${goodsId}`,
      );
    }
    this.logger.warn(
      `purchase voided, broker did not confirm: request=${requestId} goods=${goodsId} user=${userId}`,
    );
    throw new UnavailableError('The order queue did not confirm; nothing was taken');
  }

  /**
   * The deduct command failed on its way (a timeout, a reset connection): the script may or may
   * not have run. Voiding the request settles it either way: a script that ran is given back, one
   * still on its way is refused when it arrives. Without the void, only a command that never left
   * this process is known to have taken nothing.
   */
  private async afterFailedDeduct(order: NewOrder, error: unknown): Promise<PurchaseAccepted> {
    let ordered: boolean;
    try {
      ordered = await this.voidInRedis(order);
    } catch {
      if (neverSent(error))
        throw new UnavailableError('Redis is unavailable; nothing was taken', error);
      this.logger.warn(
        `purchase neither answered nor voided, outcome unknown: request=${order.requestId} goods=${order.goodsId} user=${order.userId}`,
      );
      throw new UnknownOutcomeError(
        order.requestId,
        'Redis did not answer this purchase nor its void: it may have been taken; its result will tell',
        error,
      );
    }
    if (ordered) return { status: 'QUEUED', requestId: order.requestId };
    throw new UnavailableError('Redis is unavailable; nothing was taken', error);
  }

  /**
   * Redis took the purchase while the sale was being held from the Redis path (see
   * FallbackGate): it is given back before its message is published. A release Redis does not
   * answer leaves it in flight, and the outbox sweeper publishes it: an unknown outcome.
   */
  private async afterHeldDeduct(order: NewOrder): Promise<PurchaseAccepted> {
    let ordered: boolean;
    try {
      ordered = await this.voidInRedis(order);
    } catch (error) {
      this.logger.warn(
        `purchase held from redis and not given back, outcome unknown: request=${order.requestId} goods=${order.goodsId} user=${order.userId}`,
      );
      throw new UnknownOutcomeError(
        order.requestId,
        'This sale is moving to MySQL and Redis did not answer the release of this purchase: it may have been taken; its result will tell',
        error,
      );
    }
    if (ordered) return { status: 'QUEUED', requestId: order.requestId };
    this.metrics.fallbackRefusals.inc({ reason: 'held' });
    throw new UnavailableError('This sale is moving to MySQL; nothing was taken');
  }

  /**
   * Gives a purchase Redis may hold back there, and voids its request (a deduct still on its way
   * is refused). True when it is an order already: a consumer claimed or completed it. Throws
   * what the release threw.
   */
  private async voidInRedis(order: NewOrder): Promise<boolean> {
    const released = await this.ledger.release(
      order.goodsId,
      order.requestId,
      'UNAVAILABLE',
      false,
      order.userId,
    );
    return released === ReleaseCode.Claimed || released === ReleaseCode.Completed;
  }

  /** Redis has no sale: tell apart an unknown goods, a closed window and a missed preheat. */
  private async notPreheated(goodsId: number): Promise<DomainError> {
    const goods = await orUnavailable('MySQL', () => this.goods.findOrThrow(goodsId));
    const now = new Date();
    if (now < goods.startAt)
      return new DomainError('SALE_NOT_STARTED', 'The sale has not started yet');
    if (now >= goods.endAt) return new DomainError('SALE_ENDED', 'The sale has ended');
    return new DomainError(
      'NOT_PREHEATED',
      'The sale is not open for purchases yet; try again shortly',
    );
  }
}

function rebuilding(): UnavailableError {
  return new UnavailableError('Redis is being rebuilt after a restart; nothing was taken');
}
