import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Trace } from '../../infra/tracing/tracing.js';
import { FaultInjectorService } from '../../config/fault-injector.service.js';
import { DomainError, orUnavailable, UnavailableError } from '../../common/errors/domain-error.js';
import type { PurchaseTicket } from '../availability/purchase-ticket.js';
import { LoadMonitorService } from '../overload/load-monitor.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { encodeOrderMessage, type NewOrder } from '../messaging/order-message.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import { newOrderNo } from '../orders/order-no.js';
import { deductRefusal } from '../sale-store/deduct-refusals.js';
import { DeductCode, PurchaseLedgerStore } from '../sale-store/purchase-ledger.store.js';
import { PurchaseLocksService } from './purchase-locks.service.js';
import { PurchaseSettlementService } from './purchase-settlement.service.js';
import type { PurchaseAccepted, PurchaseStrategy } from './purchase.types.js';

/**
 * A purchase Redis decides: the per-user lock, the atomic deduct in Redis, the confirmed
 * publish, and (PurchaseSettlementService) what a purchase that did not go straight through answers.
 */
@Injectable()
export class RedisPurchaseService implements PurchaseStrategy {
  private readonly logger = new Logger(RedisPurchaseService.name);

  constructor(
    private readonly ledger: PurchaseLedgerStore,
    private readonly locks: PurchaseLocksService,
    private readonly publisher: OrderPublisher,
    private readonly settlement: PurchaseSettlementService,
    private readonly faults: FaultInjectorService,
    private readonly metrics: MetricsService,
    private readonly load: LoadMonitorService,
  ) {}

  /** `step`, timed into seckill_purchase_stage_duration_seconds whether it answers or throws. */
  private async timed<T>(stage: 'lock' | 'deduct' | 'confirm', step: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await step();
    } finally {
      this.metrics.purchaseStages.observe({ stage }, (performance.now() - started) / 1_000);
    }
  }

  async purchase(
    ticket: PurchaseTicket,
    userId: number,
    quantity: number,
    trace?: Trace,
  ): Promise<PurchaseAccepted> {
    const { goodsId } = ticket;
    // The bucket count: read once per goods and instance (Redis meta, else MySQL), then from memory.
    const home = await orUnavailable('Redis or MySQL', () => this.ledger.homeKeys(goodsId, userId));
    // Asked again now that the bucket count is known: the first purchase of a goods with stock
    // buckets on this instance was judged by its goods-wide keys' master alone, and a master
    // holding one of its buckets may be held from the Redis path. The retry is decided whole.
    const still = ticket.recheck();
    if (still === 'rebuilding') throw rebuilding();
    if (still === 'held') {
      throw new UnavailableError('Part of this sale is held from Redis; nothing was taken');
    }
    if (!this.publisher.isReady()) {
      throw new UnavailableError('The order queue is unavailable; nothing was taken');
    }
    const lock = await orUnavailable('Redis', () =>
      this.timed('lock', () => this.locks.tryLock(home, userId)),
    );
    if (!lock) {
      throw new DomainError(
        'DUPLICATE_REQUEST',
        'Another purchase of this goods by you is in progress',
      );
    }
    let confirmed: string | undefined;
    try {
      const outcome = await this.purchaseLocked(ticket, userId, quantity, trace);
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
    ticket: PurchaseTicket,
    userId: number,
    quantity: number,
    trace: Trace,
  ): Promise<{ accepted: PurchaseAccepted; confirmed: boolean }> {
    const { goodsId } = ticket;
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
      ({ code } = await this.timed('deduct', () =>
        this.ledger.deduct(
          goodsId,
          userId,
          quantity,
          order.requestId,
          encodeOrderMessage(order),
          trace,
        ),
      ));
    } catch (error) {
      return { accepted: await this.settlement.afterFailedDeduct(order, error), confirmed: false };
    }
    if (code !== DeductCode.Accepted && code !== DeductCode.Replayed) {
      throw deductRefusal(code) ?? (await this.settlement.notPreheated(goodsId));
    }
    this.faults.crashPoint('after-deduct');
    // Held from the Redis path while Redis took it (another instance is opening the sale to
    // MySQL, or this one's marks are past their lease): a 202 now could be refused by MySQL once
    // the fallback sells. Nothing is published yet, so giving it back in Redis settles it.
    if (ticket.heldFromRedis()) {
      return { accepted: await this.settlement.afterHeldDeduct(order), confirmed: false };
    }

    const accepted: PurchaseAccepted = { status: 'QUEUED', requestId: order.requestId };
    // The load monitor sheds new purchases while the oldest confirm awaited is too old.
    const confirmed = this.load.confirmStarted();
    let published: boolean;
    try {
      published = await this.timed('confirm', () => this.publisher.publish(order, trace));
    } finally {
      confirmed();
    }
    if (published) {
      // Ties the HTTP request (its reqId, userId, goodsId) to the purchase's id, which the
      // consumer's lines name. Debug: at info it would be a line per purchase.
      this.logger.debug(`purchase accepted: request=${order.requestId} quantity=${quantity}`);
      return { accepted, confirmed: true };
    }

    return { accepted: await this.settlement.afterUnconfirmedPublish(order), confirmed: false };
  }
}

/** Redis is being rebuilt after a restart: nothing was taken. */
export function rebuilding(): UnavailableError {
  return new UnavailableError('Redis is being rebuilt after a restart; nothing was taken');
}
