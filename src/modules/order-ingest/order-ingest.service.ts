import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Trace } from '../../infra/tracing/tracing.js';
import { backoffWithJitter, isPermanentDataError } from '../../common/database/transient-errors.js';
import { FaultInjectorService } from '../../config/fault-injector.service.js';
import { ReleaseCode } from '../sale-store/purchase-ledger.store.js';
import { IngestLedgerService } from './ingest-ledger.service.js';
import { OrderWriterService } from '../orders/order-writer.service.js';
import type { NewOrder } from '../messaging/order-message.js';
import type { IngestOutcome, IngestPurchase } from './order-ingest.types.js';
import type { WriteOutcome } from '../orders/order.types.js';
import { OrdersService } from '../orders/orders.service.js';
import { VoidedRequestsService } from '../orders/voided-requests.service.js';

/**
 * Starts written orders' payment clocks (the messaging module's publisher). A port rather than
 * the publisher itself: messaging depends on orders, not the other way round.
 */
export interface PaymentTimeouts {
  /** True once every timeout message was confirmed. */
  publishTimeouts(orders: { orderNo: string; goodsId: number }[], trace?: Trace): Promise<boolean>;
}

export const PAYMENT_TIMEOUTS = Symbol('PAYMENT_TIMEOUTS');

const MAX_BACKOFF_MS = 5_000;

/** The service is stopping: what is not settled yet is left to the next consumer. */
class Stopped extends Error {}

/** Another consumer holds the claim on a request this one would give up: settle it later. */
class WrittenElsewhere extends Error {
  constructor(requestId: string) {
    super(`request ${requestId} is being written by another consumer, its exhausted copy waits`);
  }
}

/** Outcomes final so far, by request id. */
type Settled = Map<string, IngestOutcome>;

/**
 * Turns accepted purchases of one goods into orders: claim in Redis, one batched MySQL write
 * (see OrderWriterService), SUCCESS results, payment timeouts; or FAILED with the stock back. Each
 * purchase gets exactly one final outcome, and a step that failed is retried without redoing
 * the steps before it, so nothing is written, released or reported twice.
 *
 * Two copies of one request may be in two consumers at once (the sweeper republished it). Each
 * ingest claims as its own holder and renews the claim while it writes; one giving up its copy
 * (exhausted, or refused by MySQL) cannot release a request another holder's claim still holds
 * (lua/seckill-release.lua): that consumer is writing it and settles it. A claim whose renewals
 * failed unseen (its consumer cut from Redis) lapses while its write may still commit: so an
 * exhausted copy voids the request in MySQL before it gives anything back (settleExhausted).
 */
@Injectable()
export class OrderIngestService {
  private readonly logger = new Logger(OrderIngestService.name);

  constructor(
    private readonly writer: OrderWriterService,
    private readonly orders: OrdersService,
    private readonly ledger: IngestLedgerService,
    private readonly voids: VoidedRequestsService,
    @Inject(PAYMENT_TIMEOUTS) private readonly timeouts: PaymentTimeouts,
    private readonly faults: FaultInjectorService,
  ) {}

  /**
   * One outcome per purchase, in their order. Outages (MySQL, Redis, the broker not confirming)
   * are retried with backoff until they pass, not reported: the caller's messages must not burn
   * deliveries on them. Once `stop` is aborted, a failure ends the retries and what is not
   * final by then comes back `deferred`. `trace`: the consumer batch's, parent of the MySQL write
   * and the timeout publish.
   */
  async ingest(
    goodsId: number,
    purchases: IngestPurchase[],
    stop?: AbortSignal,
    trace?: Trace,
  ): Promise<IngestOutcome[]> {
    const settled: Settled = new Map();
    const holder = randomUUID();
    try {
      const exhausted = purchases.filter((purchase) => purchase.exhausted);
      await this.untilDone(goodsId, exhausted.length, stop, () =>
        this.settleExhausted(goodsId, exhausted, settled, holder),
      );
      const fresh = purchases.filter((purchase) => !purchase.exhausted);
      const claimed = await this.untilDone(goodsId, fresh.length, stop, () =>
        this.claim(goodsId, fresh, settled, holder),
      );
      await this.ledger.whileClaimed(goodsId, claimed, holder, () =>
        this.write(goodsId, claimed, settled, stop, holder, trace),
      );
    } catch (error) {
      if (!(error instanceof Stopped)) throw error;
      this.logger.warn(
        `left for redelivery at shutdown: goods=${goodsId} n=${purchases.length - settled.size}`,
      );
    }
    return purchases.map(
      ({ order }) => settled.get(order.requestId) ?? { kind: 'deferred' as const, order },
    );
  }

  private async untilDone<T>(
    goodsId: number,
    n: number,
    stop: AbortSignal | undefined,
    step: () => Promise<T>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await step();
      } catch (error) {
        if (stop?.aborted) throw new Stopped();
        const backoff = backoffWithJitter(attempt, 100, MAX_BACKOFF_MS);
        this.logger.error(
          `order batch failed, retrying in ${backoff} ms: goods=${goodsId} n=${n} ${(error as Error).message}`,
        );
        await sleep(backoff);
      }
    }
  }

  /**
   * A valid order whose message keeps coming back (its instances kept dying): it must still end
   * as an order or as FAILED with its stock back, never vanish into the dead-letter queue. While
   * another consumer's claim holds the request, it waits (retried): that one is writing it.
   *
   * A claim that lapsed is no proof its writer is gone: one cut from Redis (its renewals failing)
   * may still commit. So the void is recorded in MySQL before the stock goes back in Redis, as
   * after an unconfirmed publish: that write and this void exclude each other there
   * (VoidedRequestsService). The order first: the void is not recorded, the request completed. The void
   * first: the late write is refused (voided) and gives nothing back twice.
   */
  private async settleExhausted(
    goodsId: number,
    purchases: IngestPurchase[],
    settled: Settled,
    holder: string,
  ): Promise<void> {
    for (const { order } of purchases) {
      if (settled.has(order.requestId)) continue;
      // Through IngestLedgerService like the other steps: retried while Redis is down, one exhausted
      // message would hold its batch, hence the consumer's drain and the fallback's barrier.
      if (await this.orders.findByRequestId(order.requestId)) {
        await this.settleFound(goodsId, order, settled);
        continue;
      }
      // Asked before the void: a writer whose lease is in force is let finish, not voided.
      if (await this.ledger.claimedElsewhere(goodsId, order, holder)) {
        throw new WrittenElsewhere(order.requestId);
      }
      if ((await this.voids.record(order.requestId, goodsId)) === 'ordered') {
        await this.settleFound(goodsId, order, settled);
        continue;
      }
      const released = await this.ledger.release(goodsId, order, 'UNDELIVERABLE', holder);
      // Its writer renewed its claim since it was asked: that write finds the void and gives the
      // purchase back itself; the retry finds the void recorded, then nothing in flight.
      if (released === ReleaseCode.Claimed) throw new WrittenElsewhere(order.requestId);
      if (released === ReleaseCode.Completed) {
        settled.set(order.requestId, { kind: 'completed', order });
        continue;
      }
      this.logger.error(
        `order given up, its message exhausted its deliveries, stock returned: request=${order.requestId} goods=${goodsId} user=${order.userId}`,
      );
      settled.set(order.requestId, { kind: 'exhausted', order });
    }
  }

  /** An exhausted copy of a purchase that is an order: its SUCCESS result, its message acked. */
  private async settleFound(goodsId: number, order: NewOrder, settled: Settled): Promise<void> {
    await this.ledger.complete(goodsId, [order]);
    settled.set(order.requestId, { kind: 'completed', order });
  }

  /** Returns the orders to write; the voided ones (released meanwhile) are settled as dropped. */
  private async claim(
    goodsId: number,
    purchases: IngestPurchase[],
    settled: Settled,
    holder: string,
  ): Promise<NewOrder[]> {
    if (purchases.length === 0) return [];
    const flags = await this.ledger.claim(
      goodsId,
      purchases.map(({ order }) => order),
      holder,
    );
    const claimed: NewOrder[] = [];
    purchases.forEach(({ order }, index) => {
      if (flags[index]) {
        claimed.push(order);
        return;
      }
      this.logger.log(`dropped voided purchase: request=${order.requestId} goods=${goodsId}`);
      settled.set(order.requestId, { kind: 'voided', order });
    });
    return claimed;
  }

  /**
   * Writes once, then finishes (results, timeouts) until that goes through. When MySQL refuses
   * the data itself, each order is written alone, so that only the refused one ends as FAILED.
   */
  private async write(
    goodsId: number,
    orders: NewOrder[],
    settled: Settled,
    stop: AbortSignal | undefined,
    holder: string,
    trace: Trace,
  ): Promise<void> {
    if (orders.length === 0) return;
    let writes: WriteOutcome[] | undefined;
    let isolate = false;
    await this.untilDone(goodsId, orders.length, stop, async () => {
      if (!writes) {
        await this.faults.pausePoint('before-order-write');
        try {
          writes = await this.writer.writeBatch(goodsId, orders, trace);
        } catch (error) {
          if (!isPermanentDataError(error)) throw error;
          if (orders.length > 1) {
            isolate = true;
            return;
          }
          await this.refuse(goodsId, orders[0], error as Error, settled, holder);
          return;
        }
        this.faults.crashPoint('after-commit');
      }
      await this.finish(goodsId, writes, settled, holder, trace);
    });
    if (isolate) {
      for (const order of orders) await this.write(goodsId, [order], settled, stop, holder, trace);
    }
  }

  private async finish(
    goodsId: number,
    writes: WriteOutcome[],
    settled: Settled,
    holder: string,
    trace: Trace,
  ): Promise<void> {
    for (const outcome of writes) {
      if (settled.has(outcome.order.requestId)) continue;
      const { order } = outcome;
      if (outcome.kind === 'rejected') {
        await this.giveUp(goodsId, order, outcome.reason, holder);
        this.logger.warn(
          `purchase failed: request=${order.requestId} goods=${goodsId} user=${order.userId} reason=${outcome.reason}`,
        );
        settled.set(order.requestId, outcome);
      } else if (outcome.kind === 'voided') {
        // Its buyer was answered 503, or an exhausted copy of it was given up while this claim
        // had lapsed unseen, and the void held in MySQL where Redis's was lost or not read.
        // Redis may still hold the purchase in flight (its release failed, or found this claim):
        // its stock goes back as any void's; else the release only marks it voided.
        await this.giveUp(goodsId, order, 'UNAVAILABLE', holder);
        this.logger.log(
          `dropped purchase voided in mysql: request=${order.requestId} goods=${goodsId}`,
        );
        settled.set(order.requestId, outcome);
      }
    }
    const done = writes.filter(
      (outcome) => outcome.kind === 'written' || outcome.kind === 'duplicate',
    );
    if (done.length === 0) return;
    await this.ledger.complete(
      goodsId,
      done.map(({ order }) => order),
    );
    // The payment clock starts now. A duplicate gets its timeout again too: the first attempt
    // may have died before publishing it, and the timeout consumer is idempotent.
    if (
      !(await this.timeouts.publishTimeouts(
        done.map(({ order }) => order),
        trace,
      ))
    ) {
      throw new Error('payment timeout messages were not confirmed');
    }
    for (const outcome of done) settled.set(outcome.order.requestId, outcome);
  }

  /**
   * This consumer's copy of a claimed purchase will not become an order: its stock goes back,
   * unless another consumer's claim holds the request (a copy of it that may still be written:
   * that consumer settles it).
   */
  private async giveUp(
    goodsId: number,
    order: NewOrder,
    reason: string,
    holder: string,
  ): Promise<void> {
    // Through IngestLedgerService: see settleExhausted.
    const released = await this.ledger.release(goodsId, order, reason, holder);
    if (released === ReleaseCode.Claimed) {
      this.logger.warn(
        `purchase left to the consumer writing another copy of it: request=${order.requestId} goods=${goodsId}`,
      );
    }
  }

  /** MySQL refuses this order on every try: FAILED with its stock back, the rest go on. */
  private async refuse(
    goodsId: number,
    order: NewOrder,
    error: Error,
    settled: Settled,
    holder: string,
  ): Promise<void> {
    await this.giveUp(goodsId, order, 'REJECTED', holder);
    this.logger.error(
      `order refused by MySQL, stock returned: request=${order.requestId} goods=${goodsId} user=${order.userId} ${error.message}`,
    );
    settled.set(order.requestId, { kind: 'refused', order });
  }
}
