import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { bucketOrder } from '../../common/stock-buckets.js';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { bucketKeys, type SaleKeys } from '../../infra/redis/seckill-keys.js';
import {
  DeductCode,
  LedgerScripts,
  ReleaseCode,
  RetakeCode,
  type RetakenOrder,
} from './ledger.scripts.js';
import { LoanCode, LoanScripts } from './loan.scripts.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { BucketCountsStore } from './bucket-counts.store.js';
import { SoldOutMemoStore } from './sold-out-memo.store.js';

/** The loans of a late payment's retakes of one order: this, then the attempt's own id. */
const retakeLoanPrefix = (orderNo: string) => `retake:${orderNo}:`;

/** What a purchase asks for, as the deduct script takes it. */
export interface PurchaseAsk {
  userId: number;
  quantity: number;
  requestId: string;
  message: string;
}

/**
 * Loans between the buckets of a goods whose stock is split (see seckill-keys.ts bucketKeys): a
 * purchase whose home bucket is short borrows from another bucket, a loan written down in the
 * lending bucket until the purchase is recorded at home, then dropped (or given back when the
 * record did not happen).
 */
@Injectable()
export class StockLoansStore {
  private readonly logger = new Logger(StockLoansStore.name);

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly ledger: LedgerScripts,
    private readonly loanScripts: LoanScripts,
    private readonly counts: BucketCountsStore,
    private readonly soldOut: SoldOutMemoStore,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * The purchase's home bucket `home` was short: borrows from the other buckets (bucketOrder,
   * skipping those this instance saw empty a moment ago) and records the purchase at home;
   * SOLD_OUT only when every bucket is short. `homeEmpty`: the home bucket holds none at all.
   * A record step that fails on its way voids the request at home before this throws; the loan
   * is then given back at once when the record surely did not happen, else left to the sweeper.
   */
  async borrow(
    goodsId: number,
    shards: number,
    home: number,
    homeEmpty: boolean,
    ask: PurchaseAsk,
  ): Promise<{ code: DeductCode; remaining: number }> {
    const homeKeys = bucketKeys(goodsId, shards, home);
    const { order, skipped } = this.soldOut.bucketHints.candidates(goodsId, ask.userId, shards);
    let empty = homeEmpty ? 1 + skipped : skipped;
    let missing = false;
    for (const bucket of order) {
      const lender = bucketKeys(goodsId, shards, bucket);
      const loan = await this.loanScripts.loan(
        lender,
        ask.requestId,
        ask.quantity,
        ask.userId,
        home,
      );
      // A repair counts the goods: not SOLD_OUT (a final answer), only "not now".
      if (loan.code === LoanCode.Frozen) return { code: DeductCode.Frozen, remaining: 0 };
      if (loan.code === LoanCode.NotPreheated) missing = true;
      if (loan.code !== LoanCode.Lent) {
        if (loan.code === LoanCode.Empty && loan.remaining === 0) {
          this.soldOut.markBucketEmpty(goodsId, bucket);
          empty++;
        }
        continue;
      }
      this.metrics.stockLoans.inc({ event: 'taken' });
      return this.recordBorrowed(goodsId, homeKeys, { keys: lender, bucket }, ask);
    }
    // A bucket Redis does not hold (its master restarted empty, not yet noticed) may have stock:
    // not SOLD_OUT, a final answer, but what a sale not loaded gets.
    if (missing) return { code: DeductCode.NotPreheated, remaining: 0 };
    if (empty === shards) this.soldOut.markSoldOut(goodsId);
    return { code: DeductCode.SoldOut, remaining: 0 };
  }

  /**
   * A late payment's order whose home bucket is short (lua/seckill-retake.lua answered SOLD_OUT
   * there): borrows its unit from another bucket, the way a purchase does, and takes it again at
   * home on that loan. Every other bucket is asked in the buyer's order, hints or not: a refund is
   * a final answer. The loan's id is this attempt's own, so that a loan the sweeper voided at home
   * (an attempt that took too long) never blocks the next one. Whatever the home bucket answers,
   * the loan is then settled the sweeper's way: dropped if recorded there, given back if not.
   */
  async retakeOnLoan(
    goodsId: number,
    shards: number,
    home: number,
    order: RetakenOrder,
  ): Promise<RetakeCode> {
    const homeKeys = bucketKeys(goodsId, shards, home);
    await this.settleEarlierRetakeLoans(goodsId, shards, homeKeys, order);
    const loanId = `${retakeLoanPrefix(order.orderNo)}${randomUUID()}`;
    let missing = false;
    for (const bucket of bucketOrder(order.userId, shards)) {
      const lender = bucketKeys(goodsId, shards, bucket);
      const loan = await this.loanScripts.loan(lender, loanId, order.quantity, order.userId, home);
      if (loan.code === LoanCode.Frozen) return RetakeCode.Frozen;
      if (loan.code === LoanCode.NotPreheated) missing = true;
      if (loan.code !== LoanCode.Lent) continue;
      this.metrics.stockLoans.inc({ event: 'taken' });
      let code: RetakeCode;
      try {
        code = await this.ledger.retake(homeKeys, 'take', order, { id: loanId, bucket });
      } catch (error) {
        await this.voidUnrecorded(goodsId, homeKeys, lender, loanId, order.userId).catch(
          () => undefined,
        );
        throw error;
      }
      await this.voidUnrecorded(goodsId, homeKeys, lender, loanId, order.userId);
      return code;
    }
    return missing ? RetakeCode.NotPreheated : RetakeCode.SoldOut;
  }

  /**
   * Loans an earlier attempt for this order left open (it died, or stalls, between its loan and
   * its record at home): each is settled now, as the sweeper would later (given back unless
   * recorded at home, and voided there so that a stalled attempt's record is refused), so that
   * the unit it holds can be borrowed again instead of the order being refunded for want of it.
   * The caller holds the goods' MySQL row lock: no other live attempt for the order runs.
   */
  private async settleEarlierRetakeLoans(
    goodsId: number,
    shards: number,
    homeKeys: SaleKeys,
    order: RetakenOrder,
  ): Promise<void> {
    for (const bucket of bucketOrder(order.userId, shards)) {
      const lender = bucketKeys(goodsId, shards, bucket);
      // Open loans only (each settled within seconds): a small hash.
      const prefix = retakeLoanPrefix(order.orderNo);
      for (const loanId of await this.redis.hkeys(lender.loans)) {
        if (!loanId.startsWith(prefix)) continue;
        await this.voidUnrecorded(goodsId, homeKeys, lender, loanId, order.userId);
      }
    }
  }

  private async recordBorrowed(
    goodsId: number,
    homeKeys: SaleKeys,
    { keys: lender, bucket }: { keys: SaleKeys; bucket: number },
    { userId, quantity, requestId, message }: PurchaseAsk,
  ): Promise<{ code: DeductCode; remaining: number }> {
    let recorded: { code: DeductCode; remaining: number };
    try {
      recorded = await this.ledger.deduct(homeKeys, userId, quantity, requestId, message, bucket);
    } catch (error) {
      await this.voidUnrecorded(goodsId, homeKeys, lender, requestId, userId).catch(
        () => undefined,
      );
      throw error;
    }
    if (recorded.code === DeductCode.Accepted || recorded.code === DeductCode.Replayed) {
      // Off the answer's path: an open loan of a recorded purchase only waits for the sweeper.
      void this.loanScripts.settleLoan(lender, requestId, false).catch(() => undefined);
      return recorded;
    }
    // Refused at home (the window closed, the request was voided, a repair froze the bucket):
    // the stock goes back now.
    if ((await this.loanScripts.settleLoan(lender, requestId, true)) > 0) {
      this.metrics.stockLoans.inc({ event: 'returned' });
      await this.soldOut.stockBack(goodsId);
    }
    return recorded;
  }

  /**
   * Settles a loan whose purchase may or may not have been recorded at home: the request is
   * voided there unless it was recorded (so a late record is refused), and the loan is dropped
   * (recorded: the purchase holds the stock) or given back (not recorded). Once per loan.
   * Returns true when it gave stock back.
   */
  private async voidUnrecorded(
    goodsId: number,
    homeKeys: SaleKeys,
    lender: SaleKeys,
    requestId: string,
    userId: number,
  ): Promise<boolean> {
    const code = await this.ledger.release(homeKeys, requestId, false, 'UNAVAILABLE', userId, true);
    // Recorded at home (the home bucket's record of it on a loan outlives whatever became of the
    // purchase: an order, a cancel, a release there), claimed or completed: the loan is only
    // dropped. Only a request never recorded gives the loan back.
    const recorded = code !== ReleaseCode.NotInFlight;
    const closed = await this.loanScripts.settleLoan(lender, requestId, !recorded);
    if (closed > 0 && !recorded) {
      this.metrics.stockLoans.inc({ event: 'returned' });
      await this.soldOut.stockBack(goodsId);
      return true;
    }
    return false;
  }

  /**
   * Gives back the loans older than `ageMs` (on each lending bucket's Redis clock) whose
   * purchase was never recorded, and drops those whose purchase was: the home bucket's record of
   * each purchase taken on a loan (`borrowed`, written with the purchase) tells, for as long as
   * the sale is in Redis. Returns how many it gave back.
   */
  async sweep(goodsId: number, ageMs: number, at?: number): Promise<number> {
    const shards = await this.counts.of(goodsId);
    if (shards === 1) return 0;
    let returned = 0;
    for (const lender of await this.counts.buckets(goodsId)) {
      const loans = await this.redis.hgetall(lender.loans);
      const entries = Object.entries(loans);
      if (entries.length === 0) continue;
      const now = at ?? (await this.loanScripts.serverTimeMs(lender));
      for (const [requestId, raw] of entries) {
        const loan = JSON.parse(raw) as {
          quantity: number;
          at: number;
          userId: string;
          home: number;
        };
        if (loan.at > now - ageMs) continue;
        const homeKeys = bucketKeys(goodsId, shards, loan.home);
        const userId = Number(loan.userId);
        if (await this.voidUnrecorded(goodsId, homeKeys, lender, requestId, userId)) {
          returned++;
          this.metrics.stockLoans.inc({ event: 'swept' });
          this.logger.warn(
            `loan given back, its purchase was never recorded: request=${requestId} goods=${goodsId} user=${userId} quantity=${loan.quantity}`,
          );
        }
      }
    }
    return returned;
  }
}
