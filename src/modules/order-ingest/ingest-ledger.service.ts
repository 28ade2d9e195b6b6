import { Injectable, Logger } from '@nestjs/common';
import { RedisWatchdogService } from '../../infra/redis/redis-watchdog.service.js';
import { RedisDownPolicy } from '../fallback/redis-down.policy.js';
import {
  CLAIM_LEASE_MS,
  PurchaseLedgerStore,
  type ReleaseCode,
} from '../sale-store/purchase-ledger.store.js';
import { OrderWriterService } from '../orders/order-writer.service.js';
import type { NewOrder } from '../messaging/order-message.js';

/**
 * The Redis side of an ingest (claim, complete, release) as OrderIngestService takes it: each step
 * either runs or, where the Redis-down policy lets the batch go on without Redis, is skipped
 * with the goods marked for a rebuild.
 *
 * With REDIS_DOWN_MODE=database, Redis being unreachable does not hold the batch: the fallback
 * may sell only once every order Redis accepted is written (its barrier waits for these
 * messages), so they are written without Redis. The goods is marked stale in MySQL first: Redis
 * then does not sell it again before it is rebuilt from MySQL, which accounts for what was
 * skipped here (claims, results, stock given back).
 */
@Injectable()
export class IngestLedgerService {
  private readonly logger = new Logger(IngestLedgerService.name);

  constructor(
    private readonly ledger: PurchaseLedgerStore,
    private readonly policy: RedisDownPolicy,
    private readonly watchdog: RedisWatchdogService,
    private readonly writer: OrderWriterService,
  ) {}

  /**
   * Which of `orders` this holder now claims (false: voided meanwhile). A claim skipped is the
   * claim an empty Redis would give (every one claimed), as after a restart; it is skipped only
   * while the watchdog holds Redis down for this goods, not on any failure: a command that timed
   * out on a live connection may be racing a void (the buyer answered 503), and a claim skipped
   * then would write a purchase the buyer was told did not happen.
   */
  async claim(goodsId: number, orders: NewOrder[], holder: string): Promise<boolean[]> {
    const claims = await this.step(goodsId, () => this.ledger.claim(goodsId, orders, holder), {
      onlyWhenDown: true,
    });
    return claims === 'skipped' ? orders.map(() => true) : claims;
  }

  /** Marks written orders completed (their SUCCESS results). */
  async complete(goodsId: number, orders: NewOrder[]): Promise<void> {
    await this.step(goodsId, () => this.ledger.complete(goodsId, orders.map(completedOf)));
  }

  /** Gives a purchase this holder will not write back (see PurchaseLedgerStore.release). */
  release(
    goodsId: number,
    order: NewOrder,
    reason: string,
    holder: string,
  ): Promise<ReleaseCode | 'skipped'> {
    return this.step(goodsId, () =>
      this.ledger.release(goodsId, order.requestId, reason, holder, order.userId),
    );
  }

  /**
   * Whether another consumer's claim in force would refuse this holder's release of `order`
   * (see PurchaseLedgerStore.claimedElsewhere). Skipped as the claim is (false: nobody's claim can be
   * read while Redis is down for the goods, and the void in MySQL decides alone); a timeout on a
   * live connection is retried, not taken for "unclaimed".
   */
  async claimedElsewhere(goodsId: number, order: NewOrder, holder: string): Promise<boolean> {
    const claimed = await this.step(
      goodsId,
      () => this.ledger.claimedElsewhere(goodsId, order.requestId, holder, order.userId),
      { onlyWhenDown: true },
    );
    return claimed === true;
  }

  /**
   * Renews the claim on `orders` while `work` runs: a claim left to lapse is taken for a
   * consumer gone, whose purchases another consumer's exhausted copy may then give back (voided
   * in MySQL first: this write, if it goes on all the same, is then refused).
   */
  async whileClaimed<T>(
    goodsId: number,
    orders: NewOrder[],
    holder: string,
    work: () => Promise<T>,
  ): Promise<T> {
    if (orders.length === 0) return work();
    const renewal = setInterval(() => {
      // A renewal that fails only brings the lapse nearer; the next one may pass.
      this.ledger.claim(goodsId, orders, holder).catch(() => undefined);
    }, CLAIM_LEASE_MS / 3);
    renewal.unref();
    try {
      return await work();
    } finally {
      clearInterval(renewal);
    }
  }

  private async step<T>(
    goodsId: number,
    run: () => Promise<T>,
    options: { onlyWhenDown?: boolean } = {},
  ): Promise<T | 'skipped'> {
    try {
      return await run();
    } catch (error) {
      if (!this.policy.goesOnWithoutRedis(error)) throw error;
      if (
        options.onlyWhenDown &&
        this.watchdog.identifiedFor(goodsId, this.ledger.knownShards(goodsId))
      ) {
        throw error;
      }
      await this.writer.markRedisStale(goodsId);
      this.logger.warn(`redis step skipped, goods marked for a rebuild: goods=${goodsId}`);
      return 'skipped';
    }
  }
}

function completedOf(order: NewOrder) {
  const { requestId, userId, orderNo, quantity } = order;
  return { requestId, userId, orderNo, quantity };
}
