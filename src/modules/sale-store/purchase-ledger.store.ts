import { Inject, Injectable, Logger } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import {
  DeductCode,
  LedgerScripts,
  ReleaseCode,
  RestockCode,
  RetakeCode,
  type RetakenOrder,
  type CompletedOrder,
  type ReleaseForce,
} from './ledger.scripts.js';
import { bucketKeys } from '../../infra/redis/seckill-keys.js';
import { homeBucket } from '../../common/stock-buckets.js';
import type { Trace } from '../../infra/tracing/tracing.js';
import { BucketCountsStore } from './bucket-counts.store.js';
import { SoldOutMemoStore } from './sold-out-memo.store.js';
import { StockLoansStore, type PurchaseAsk } from './stock-loans.store.js';

export { DeductCode, ReleaseCode, RestockCode, RetakeCode };
export type { CompletedOrder, ReleaseForce, RetakenOrder };

/** A purchase, as the consumers know it: enough to find the buyer's home bucket. */
interface BuyerRef {
  requestId: string;
  userId: number;
}

export interface PurchaseResult {
  status: 'QUEUED' | 'SUCCESS' | 'FAILED';
  requestId: string;
  orderNo?: string;
  reason?: string;
}

/**
 * How long a consumer's claim on the purchases it writes holds unless renewed (lua/seckill-
 * claim.lua). Its holder renews it while it writes (OrderIngestService); only a holder that died or
 * lost Redis lets it lapse, and only then may another consumer's forced release take it over.
 */
export const CLAIM_LEASE_MS = 30_000;

/**
 * The purchase's ledger in Redis, in the buyer's home bucket: the deduct that accepts it, the
 * release that gives it back, the consumer's claim and completion, the restock of a cancelled
 * order, and the buyer's result. Each takes a goods id and answers for the goods as a whole.
 */
@Injectable()
export class PurchaseLedgerStore {
  private readonly logger = new Logger(PurchaseLedgerStore.name);

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly scripts: LedgerScripts,
    private readonly counts: BucketCountsStore,
    private readonly soldOut: SoldOutMemoStore,
    private readonly loans: StockLoansStore,
  ) {}

  /** The buyer's home bucket's keys: where the purchase lock and the result live. */
  homeKeys(goodsId: number, userId: number) {
    return this.counts.homeKeys(goodsId, userId);
  }

  /** The goods' bucket count when this instance knows it already, else 1 (no round trip). */
  knownShards(goodsId: number): number {
    return this.counts.known(goodsId);
  }

  /**
   * Takes the stock for one purchase and records it in the buyer's home bucket; a home bucket
   * without enough stock borrows from the others (StockLoansStore). Called under the buyer's purchase
   * lock, which keeps the borrow and the record of one buyer's clicks apart.
   */
  async deduct(
    goodsId: number,
    userId: number,
    quantity: number,
    requestId: string,
    message: string,
    trace?: Trace,
  ): Promise<{ code: DeductCode; remaining: number }> {
    const shards = await this.counts.of(goodsId);
    const home = homeBucket(userId, shards);
    const homeKeys = bucketKeys(goodsId, shards, home);
    const result = await this.scripts.deduct(
      homeKeys,
      userId,
      quantity,
      requestId,
      message,
      undefined,
      trace,
    );
    if (result.code !== DeductCode.SoldOut) return result;
    if (shards === 1) {
      if (result.remaining === 0) this.soldOut.markSoldOut(goodsId);
      return result;
    }
    if (result.remaining === 0) this.soldOut.markBucketEmpty(goodsId, home);
    const ask: PurchaseAsk = { userId, quantity, requestId, message };
    return this.loans.borrow(goodsId, shards, home, result.remaining === 0, ask);
  }

  /**
   * Gives an accepted purchase back unless a consumer owns it or it is an order already (told by
   * the user's result). `force`: a consumer gives up its own copy of the request, by its claim
   * holder (see ReleaseForce): refused all the same (Claimed) while another consumer's claim holds.
   */
  async release(
    goodsId: number,
    requestId: string,
    reason: string,
    force: ReleaseForce,
    userId: number,
  ): Promise<ReleaseCode> {
    const code = await this.scripts.release(
      await this.counts.homeKeys(goodsId, userId),
      requestId,
      force,
      reason,
      userId,
    );
    if (code === ReleaseCode.Released) await this.soldOut.stockBack(goodsId);
    return code;
  }

  /**
   * Whether another consumer's claim (its lease in force) would refuse `holder`'s release of the
   * purchase now. Changes nothing: a consumer giving up its copy asks before it records the void
   * in MySQL, so that it does not void a purchase a live writer is about to commit.
   */
  async claimedElsewhere(
    goodsId: number,
    requestId: string,
    holder: string,
    userId: number,
  ): Promise<boolean> {
    const code = await this.scripts.askRelease(
      await this.counts.homeKeys(goodsId, userId),
      requestId,
      holder,
    );
    return code === ReleaseCode.Claimed;
  }

  /**
   * Per purchase, in order: true when it may be written, false when it was voided. Claims them
   * for `holder` for CLAIM_LEASE_MS; run again, renews the lease.
   */
  async claim(goodsId: number, purchases: BuyerRef[], holder: string): Promise<boolean[]> {
    const flags = new Array<boolean>(purchases.length);
    await this.counts.perHomeBucket(goodsId, purchases, async (keys, indexes) => {
      const claimed = await this.scripts.claim(
        keys,
        indexes.map((index) => purchases[index].requestId),
        holder,
        CLAIM_LEASE_MS,
      );
      indexes.forEach((index, i) => (flags[index] = claimed[i]));
    });
    return flags;
  }

  /** Returns how many were still in flight. */
  async complete(goodsId: number, orders: CompletedOrder[]): Promise<number> {
    let completed = 0;
    await this.counts.perHomeBucket(goodsId, orders, async (keys, indexes) => {
      const done = await this.scripts.complete(
        keys,
        indexes.map((index) => orders[index]),
      );
      completed += done.completed;
      for (const requestId of done.retaken) {
        this.logger.error(
          `order landed after its purchase was released, its stock taken again: request=${requestId} goods=${goodsId}`,
        );
      }
    });
    return completed;
  }

  /** Gives a cancelled order's stock back (to its buyer's home bucket), once per order number. */
  async restock(
    goodsId: number,
    orderNo: string,
    userId: number,
    quantity: number,
  ): Promise<RestockCode> {
    const keys = await this.counts.homeKeys(goodsId, userId);
    const code = await this.scripts.restock(keys, orderNo, userId, quantity);
    if (code === RestockCode.Restocked) await this.soldOut.stockBack(goodsId);
    return code;
  }

  /**
   * A late payment's order takes its unit again ("take"), or holds none ("give-back"), counted in
   * its buyer's home bucket; idempotent by order number (lua/seckill-retake.lua). Its cancel gave
   * the unit back to that bucket; when another buyer took it since, the unit is borrowed from
   * another bucket (StockLoansStore.retakeOnLoan): SOLD_OUT only when every bucket is short.
   */
  async retake(
    goodsId: number,
    mode: 'take' | 'give-back',
    order: RetakenOrder,
  ): Promise<RetakeCode> {
    const shards = await this.counts.of(goodsId);
    const home = homeBucket(order.userId, shards);
    const code = await this.scripts.retake(bucketKeys(goodsId, shards, home), mode, order);
    if (mode === 'give-back' && code === RetakeCode.Retaken) await this.soldOut.stockBack(goodsId);
    if (mode === 'take' && code === RetakeCode.SoldOut && shards > 1) {
      return this.loans.retakeOnLoan(goodsId, shards, home, order);
    }
    return code;
  }

  async result(goodsId: number, userId: number): Promise<PurchaseResult | null> {
    const keys = await this.counts.homeKeys(goodsId, userId);
    const raw = await this.redis.hget(keys.results, String(userId));
    return raw === null ? null : (JSON.parse(raw) as PurchaseResult);
  }
}
