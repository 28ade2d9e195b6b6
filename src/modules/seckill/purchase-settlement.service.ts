import { Injectable, Logger } from '@nestjs/common';
import { neverSent } from '../../common/errors/dependency-errors.js';
import {
  DomainError,
  orUnavailable,
  UnavailableError,
  UnknownOutcomeError,
} from '../../common/errors/domain-error.js';
import { GoodsService } from '../goods/goods.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { NewOrder } from '../messaging/order-message.js';
import { VoidedRequestsService } from '../orders/voided-requests.service.js';
import { PurchaseLedgerStore, ReleaseCode } from '../sale-store/purchase-ledger.store.js';
import type { PurchaseAccepted } from './purchase.types.js';

/**
 * What a purchase that did not go straight through answers, and what it settles first: a deduct
 * that failed on its way, a deduct taken while the sale was held from Redis, a publish the broker
 * did not confirm (each voided so that it takes nothing, or known to be an order already), and a
 * sale Redis does not hold.
 */
@Injectable()
export class PurchaseSettlementService {
  private readonly logger = new Logger(PurchaseSettlementService.name);

  constructor(
    private readonly ledger: PurchaseLedgerStore,
    private readonly voids: VoidedRequestsService,
    private readonly goods: GoodsService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * The broker did not confirm: the message may be lost, or held on its way and delivered later.
   * The void is recorded in MySQL first, where neither a Redis restart nor Redis being down (a
   * database-mode consumer writes without Redis) loses it, and where it and the order's write
   * exclude each other (VoidedRequestsService). Once it is committed nothing is taken, whatever Redis
   * answers next: the release only gives the stock back now rather than when the message comes.
   */
  async afterUnconfirmedPublish(order: NewOrder): Promise<PurchaseAccepted> {
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
  async afterFailedDeduct(order: NewOrder, error: unknown): Promise<PurchaseAccepted> {
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
   * FallbackGateService): it is given back before its message is published. A release Redis does not
   * answer leaves it in flight, and the outbox sweeper publishes it: an unknown outcome.
   */
  async afterHeldDeduct(order: NewOrder): Promise<PurchaseAccepted> {
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
  async notPreheated(goodsId: number): Promise<DomainError> {
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
