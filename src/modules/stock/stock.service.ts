import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import type { Repository } from 'typeorm';
import { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { scanKeys, type RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import {
  ActiveOrderRef,
  CompletedOrder,
  DeductCode,
  LoanCode,
  ReleaseCode,
  RestockCode,
  SeckillScripts,
  type RedisSaleSnapshot,
  type ReleaseForce,
} from '../../infra/redis/seckill-scripts.js';
import {
  allBucketKeys,
  bucketKeys,
  SALES_INDEX_KEY,
  saleKeys,
  type SaleKeys,
} from '../../infra/redis/seckill-keys.js';
import { homeBucket } from '../../infra/redis/stock-buckets.js';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { FaultInjector } from '../../config/fault-injector.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SoldOutMemo } from './sold-out-memo.js';

export { DeductCode, ReleaseCode, RestockCode };
export type { ActiveOrderRef, CompletedOrder, ReleaseForce };

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

export interface RebuiltSale {
  stock: number;
  usedQuantity: number;
  buyerCount: number;
}

export interface SaleSnapshot {
  totalStock: number;
  startAt: Date;
  endAt: Date;
  perUserLimit: number;
  stock: number;
}

/**
 * How long a released request id is remembered, so that its late message is dropped (Redis's
 * voided set, and MySQL's record of a void: orders/voided-requests.service.ts).
 */
export const VOIDED_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * How long a repair's freeze of a sharded goods holds unless thawed: only a repairer that died
 * mid-repair leaves it to lapse (the sale then answers 503 that long). A repair takes a few
 * round trips per bucket; one that outlasts this finds its freeze broken and runs again.
 */
const REPAIR_FREEZE_MS = 30_000;
/** Runs of a frozen repair before it gives up (each outlasting REPAIR_FREEZE_MS). */
const REPAIR_ATTEMPTS = 3;

/**
 * How long a consumer's claim on the purchases it writes holds unless renewed (lua/seckill-
 * claim.lua). Its holder renews it while it writes (OrderIngest); only a holder that died or
 * lost Redis lets it lapse, and only then may another consumer's forced release take it over.
 */
export const CLAIM_LEASE_MS = 30_000;

/**
 * The sale's live state in Redis: stock, buyers, in-flight purchases, results.
 *
 * A goods' stock may be split over several buckets (`stockShards`, see seckill-keys.ts
 * bucketKeys): each buyer has a home bucket holding all of the buyer's bookkeeping, and a
 * purchase whose home bucket is empty borrows stock from another bucket (a loan, written down
 * in the lending bucket until the purchase is recorded at home). Everything here that takes a
 * goods id answers for the goods as a whole; with one bucket it is exactly the one-bucket code.
 */
@Injectable()
export class StockService {
  private readonly logger = new Logger(StockService.name);
  /** Buckets per goods: fixed at creation, so once read it is kept. */
  private readonly shardCounts = new Map<number, number>();

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly scripts: SeckillScripts,
    private readonly soldOut: SoldOutMemo,
    private readonly metrics: MetricsService,
    @InjectRepository(GoodsEntity) private readonly goods: Repository<GoodsEntity>,
    private readonly faults: FaultInjector,
  ) {}

  /**
   * How many buckets the goods' stock is split over: from memory once known, else from Redis
   * (a preheated sale says it in its meta: `shards` for several buckets, a one-bucket sale's own
   * meta otherwise), so that purchases of a preheated sale need no MySQL; else from MySQL (an
   * unknown goods has one: its keys then say it is not preheated).
   */
  async shardsOf(goodsId: number): Promise<number> {
    const known = this.shardCounts.get(goodsId);
    if (known !== undefined) return known;
    const [shards, total] = await this.redis.hmget(saleKeys(goodsId).meta, 'shards', 'total');
    if (shards !== null || total !== null) {
      this.rememberShards(goodsId, shards === null ? 1 : Number(shards));
      return this.knownShards(goodsId);
    }
    const row = await this.goods.findOne({
      where: { id: goodsId },
      select: { id: true, stockShards: true },
    });
    if (!row) return 1;
    this.rememberShards(goodsId, row.stockShards);
    return row.stockShards;
  }

  /** The bucket count when this instance knows it already, else 1. */
  knownShards(goodsId: number): number {
    return this.shardCounts.get(goodsId) ?? 1;
  }

  /** Tells this instance a goods' bucket count (a preheat or recovery read its row anyway). */
  rememberShards(goodsId: number, shards: number): void {
    if (this.shardCounts.size >= 100_000) this.shardCounts.clear();
    this.shardCounts.set(goodsId, Math.max(1, shards));
  }

  /** The buyer's home bucket's keys (the per-user lock and result live there). */
  async homeKeys(goodsId: number, userId: number): Promise<SaleKeys> {
    const shards = await this.shardsOf(goodsId);
    return bucketKeys(goodsId, shards, homeBucket(userId, shards));
  }

  private async bucketsOf(goodsId: number): Promise<SaleKeys[]> {
    return allBucketKeys(goodsId, await this.shardsOf(goodsId));
  }

  /**
   * Takes the stock for one purchase and records it in the buyer's home bucket. With several
   * buckets, a home bucket without enough stock borrows from the others (bucketOrder, skipping
   * those this instance saw empty a moment ago); SOLD_OUT only when every bucket is short.
   * Called under the buyer's purchase lock, which keeps the borrow and the record of one buyer's
   * clicks apart. A record step that fails on its way voids the request at home before this
   * throws; the loan is then given back at once when the record surely did not happen, else left
   * to the loan sweeper (sweepLoans).
   */
  async deduct(
    goodsId: number,
    userId: number,
    quantity: number,
    requestId: string,
    message: string,
  ): Promise<{ code: DeductCode; remaining: number }> {
    const shards = await this.shardsOf(goodsId);
    const home = homeBucket(userId, shards);
    const homeKeys = bucketKeys(goodsId, shards, home);
    const result = await this.scripts.deduct(homeKeys, userId, quantity, requestId, message);
    if (shards === 1 || result.code !== DeductCode.SoldOut) {
      if (result.code === DeductCode.SoldOut && result.remaining === 0) {
        this.soldOut.markSoldOut(goodsId);
      }
      return result;
    }
    if (result.remaining === 0) this.soldOut.markBucketEmpty(goodsId, home);
    const { order, skipped } = this.soldOut.bucketHints.candidates(goodsId, userId, shards);
    let empty = result.remaining === 0 ? 1 + skipped : skipped;
    let missing = false;
    for (const bucket of order) {
      const lender = bucketKeys(goodsId, shards, bucket);
      const loan = await this.scripts.loan(lender, requestId, quantity, userId, home);
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
      const borrowed = { keys: lender, bucket };
      return this.recordBorrowed(goodsId, homeKeys, borrowed, userId, quantity, requestId, message);
    }
    // A bucket Redis does not hold (its master restarted empty, not yet noticed) may have stock:
    // not SOLD_OUT, a final answer, but what a sale not loaded gets.
    if (missing) return { code: DeductCode.NotPreheated, remaining: 0 };
    if (empty === shards) this.soldOut.markSoldOut(goodsId);
    return { code: DeductCode.SoldOut, remaining: 0 };
  }

  private async recordBorrowed(
    goodsId: number,
    homeKeys: SaleKeys,
    { keys: lender, bucket }: { keys: SaleKeys; bucket: number },
    userId: number,
    quantity: number,
    requestId: string,
    message: string,
  ): Promise<{ code: DeductCode; remaining: number }> {
    let recorded: { code: DeductCode; remaining: number };
    try {
      recorded = await this.scripts.deduct(homeKeys, userId, quantity, requestId, message, bucket);
    } catch (error) {
      await this.voidUnrecordedLoan(goodsId, homeKeys, lender, requestId, userId).catch(
        () => undefined,
      );
      throw error;
    }
    if (recorded.code === DeductCode.Accepted || recorded.code === DeductCode.Replayed) {
      // Off the answer's path: an open loan of a recorded purchase only waits for the sweeper.
      void this.scripts.settleLoan(lender, requestId, false).catch(() => undefined);
      return recorded;
    }
    // Refused at home (the window closed, the request was voided, a repair froze the bucket):
    // the stock goes back now.
    if ((await this.scripts.settleLoan(lender, requestId, true)) > 0) {
      this.metrics.stockLoans.inc({ event: 'returned' });
      await this.stockBack(goodsId);
    }
    return recorded;
  }

  /**
   * Settles a loan whose purchase may or may not have been recorded at home: the request is
   * voided there unless it was recorded (so a late record is refused), and the loan is dropped
   * (recorded: the purchase holds the stock) or given back (not recorded). Once per loan.
   * Returns true when it gave stock back.
   */
  private async voidUnrecordedLoan(
    goodsId: number,
    homeKeys: SaleKeys,
    lender: SaleKeys,
    requestId: string,
    userId: number,
  ): Promise<boolean> {
    const code = await this.scripts.release(
      homeKeys,
      requestId,
      false,
      'UNAVAILABLE',
      userId,
      true,
    );
    // Recorded at home (the home bucket's record of it on a loan outlives whatever became of the
    // purchase: an order, a cancel, a release there), claimed or completed: the loan is only
    // dropped. Only a request never recorded gives the loan back.
    const recorded = code !== ReleaseCode.NotInFlight;
    const closed = await this.scripts.settleLoan(lender, requestId, !recorded);
    if (closed > 0 && !recorded) {
      this.metrics.stockLoans.inc({ event: 'returned' });
      await this.stockBack(goodsId);
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
  async sweepLoans(goodsId: number, ageMs: number, at?: number): Promise<number> {
    const shards = await this.shardsOf(goodsId);
    if (shards === 1) return 0;
    let returned = 0;
    for (const lender of allBucketKeys(goodsId, shards)) {
      const loans = await this.redis.hgetall(lender.loans);
      const entries = Object.entries(loans);
      if (entries.length === 0) continue;
      const now = at ?? (await this.scripts.serverTimeMs(lender.stock));
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
        if (await this.voidUnrecordedLoan(goodsId, homeKeys, lender, requestId, userId)) {
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
  ) {
    const code = await this.scripts.release(
      await this.homeKeys(goodsId, userId),
      requestId,
      force,
      reason,
      userId,
    );
    if (code === ReleaseCode.Released) await this.stockBack(goodsId);
    return code;
  }

  /**
   * Per purchase, in order: true when it may be written, false when it was voided. Claims them
   * for `holder` for CLAIM_LEASE_MS; run again, renews the lease.
   */
  async claim(goodsId: number, purchases: BuyerRef[], holder: string): Promise<boolean[]> {
    const flags = new Array<boolean>(purchases.length);
    await this.perHomeBucket(goodsId, purchases, async (keys, indexes) => {
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
    await this.perHomeBucket(goodsId, orders, async (keys, indexes) => {
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

  /** Runs `work` once per home bucket, with the indexes of the purchases homed there. */
  private async perHomeBucket(
    goodsId: number,
    purchases: { userId: number }[],
    work: (keys: SaleKeys, indexes: number[]) => Promise<void>,
  ): Promise<void> {
    if (purchases.length === 0) return;
    const shards = await this.shardsOf(goodsId);
    const groups = new Map<number, number[]>();
    purchases.forEach(({ userId }, index) => {
      const home = homeBucket(userId, shards);
      const group = groups.get(home);
      if (group) group.push(index);
      else groups.set(home, [index]);
    });
    for (const [home, indexes] of groups) {
      await work(bucketKeys(goodsId, shards, home), indexes);
    }
  }

  /**
   * Loads the sale unless Redis already holds its stock. When MySQL already has orders (Redis
   * lost the sale), their buyers and the cancelled orders' numbers are written before the stock
   * key makes the sale purchasable again, so no buyer buys twice and no cancellation is
   * restocked twice.
   */
  async preheat(
    goodsId: number,
    sale: SaleSnapshot & { stockShards: number },
    history: { buyers: { userId: number; quantity: number }[]; cancelledOrderNos: string[] },
  ): Promise<{ loaded: boolean; stock: number }> {
    this.rememberShards(goodsId, sale.stockShards);
    const buckets = allBucketKeys(goodsId, sale.stockShards);
    // Where another instance looks the count up (the buckets have their own tags).
    if (buckets.length > 1) await this.redis.hset(saleKeys(goodsId).meta, 'shards', buckets.length);
    const shares = splitEvenly(sale.stock, buckets.length);
    const hasHistory = history.buyers.length > 0 || history.cancelledOrderNos.length > 0;
    const loadHistory = hasHistory && !(await this.isPreheated(goodsId));
    const byHome = buckets.map(() => [] as { userId: number; quantity: number }[]);
    if (loadHistory) {
      for (const buyer of history.buyers)
        byHome[homeBucket(buyer.userId, buckets.length)].push(buyer);
    }
    await this.faults.pausePoint('preheat-before-stock', { goodsId });
    let loaded = false;
    let stock = 0;
    for (const [bucket, keys] of buckets.entries()) {
      // Every bucket: a cancelled order is restocked at its buyer's home, whichever that is.
      const result = await this.scripts.preheat(
        keys,
        { ...sale, stock: shares[bucket] },
        {
          buyers: byHome[bucket],
          restocked: loadHistory ? history.cancelledOrderNos : [],
        },
      );
      loaded ||= result.loaded;
      stock += result.stock;
    }
    await this.redis.sadd(SALES_INDEX_KEY, String(goodsId));
    // The preheat job runs on every open sale each interval; only a load puts stock in.
    if (loaded) await this.stockBack(goodsId);
    return { loaded, stock };
  }

  /**
   * True when Redis holds the sale: the stock and the meta (window, limit) of every bucket, what
   * a purchase needs (without either it is NOT_PREHEATED).
   */
  async isPreheated(goodsId: number): Promise<boolean> {
    for (const keys of await this.bucketsOf(goodsId)) {
      if ((await this.redis.exists(keys.stock, keys.meta)) !== 2) return false;
    }
    return true;
  }

  /** Gives a cancelled order's stock back (to its buyer's home bucket), once per order number. */
  async restock(goodsId: number, orderNo: string, userId: number, quantity: number) {
    const keys = await this.homeKeys(goodsId, userId);
    const code = await this.scripts.restock(keys, orderNo, userId, quantity);
    if (code === RestockCode.Restocked) await this.stockBack(goodsId);
    return code;
  }

  /**
   * Which of these cancelled orders Redis has not given back yet: in no bucket's restocked set
   * (a restock marks its buyer's home bucket; a preheat or rebuild marks them all).
   */
  async notYetRestocked(goodsId: number, orderNos: string[]): Promise<Set<string>> {
    const pending = new Set<string>(orderNos);
    for (const keys of await this.bucketsOf(goodsId)) {
      const left = [...pending];
      for (let i = 0; i < left.length; i += 1_000) {
        const chunk = left.slice(i, i + 1_000);
        const flags = await this.redis.smismember(keys.restocked, ...chunk);
        chunk.forEach((orderNo, index) => flags[index] === 1 && pending.delete(orderNo));
      }
    }
    return pending;
  }

  /**
   * The sale's Redis side summed over its buckets (each read atomically, one after the other).
   * A loan not recorded at home yet is stock taken but not yet any purchase: it is counted in
   * flight (it becomes one, or goes back to its bucket). A recorded one is not counted again:
   * its purchase is counted where it is now (in flight at home, an order, or its stock back at
   * home), only its drop is outstanding.
   */
  async snapshot(goodsId: number): Promise<Omit<RedisSaleSnapshot, 'loans'>> {
    const buckets = await this.bucketsOf(goodsId);
    if (buckets.length === 1) {
      const single = await this.scripts.snapshot(buckets[0]);
      return {
        stock: single.stock,
        buyersQuantity: single.buyersQuantity,
        inFlightQuantity: single.inFlightQuantity,
        inFlightCount: single.inFlightCount,
      };
    }
    const total = {
      stock: 0 as number | null,
      buyersQuantity: 0,
      inFlightQuantity: 0,
      inFlightCount: 0,
    };
    for (const keys of buckets) {
      const part = await this.scripts.snapshot(keys);
      total.stock = part.stock === null || total.stock === null ? null : total.stock + part.stock;
      total.buyersQuantity += part.buyersQuantity;
      total.inFlightQuantity += part.inFlightQuantity;
      total.inFlightCount += part.inFlightCount;
      for (const loan of part.loans) {
        const recorded = await this.redis.hexists(buckets[loan.home].borrowed, loan.requestId);
        if (recorded === 0) total.inFlightQuantity += loan.quantity;
      }
    }
    return total;
  }

  /**
   * A repair's rebuild, while the sale sells. `completedSince`: serverTimeMs(goodsId) read
   * before MySQL's active orders were. One bucket: its script is safe while purchases land.
   * Several: each bucket is rebuilt by the same script in turn, its buyers and the stock it
   * holds, where its share of what is left comes on top of what its own records use (a first,
   * dry pass counts those). A purchase that borrowed from one bucket and was recorded in another
   * between their passes would be counted in neither, so the goods is frozen first (every
   * purchase of it answers 503, nothing taken): once every bucket is frozen no loan can be taken
   * and no purchase recorded, and every loan still open is settled here as the loan sweeper
   * would (voided at home unless recorded, then dropped or given back: once, by whoever comes
   * first, the same way). Nothing can move between buckets after that, so the purchases that
   * began before the freeze need no waiting for. Then the passes, then the thaw.
   */
  async rebuild(
    goodsId: number,
    totalStock: number,
    completedSince: number,
    activeOrders: ActiveOrderRef[],
    cancelledOrderNos: string[],
  ): Promise<RebuiltSale | null> {
    const buckets = await this.bucketsOf(goodsId);
    if (buckets.length === 1) {
      const rebuilt = await this.scripts.rebuild(
        buckets[0],
        totalStock,
        completedSince,
        activeOrders,
        cancelledOrderNos,
      );
      await this.stockBack(goodsId);
      return rebuilt;
    }
    for (let attempt = 1; attempt <= REPAIR_ATTEMPTS; attempt++) {
      const token = randomUUID();
      const startedAt = Date.now();
      try {
        await this.freezeAll(goodsId, buckets, token);
        await this.sweepLoans(goodsId, 0, Number.MAX_SAFE_INTEGER);
        const rebuilt = await this.rebuildBuckets(
          buckets,
          totalStock,
          completedSince,
          activeOrders,
          cancelledOrderNos,
        );
        if (!rebuilt) return null;
        if (await this.heldThroughout(buckets, token)) {
          this.logger.log(
            `goods frozen for its repair: goods=${goodsId} buckets=${buckets.length} ms=${Date.now() - startedAt}`,
          );
          return rebuilt;
        }
        this.logger.error(
          `repair outlasted its freeze, running it again: goods=${goodsId} attempt=${attempt} ms=${Date.now() - startedAt}`,
        );
      } finally {
        await this.thawAll(buckets, token);
        await this.stockBack(goodsId);
      }
    }
    throw new UnavailableError('The repair could not keep the sale frozen; run it again');
  }

  // Freeze, check and thaw on every bucket at once: the buckets are on different masters, and
  // the sale answers 503 for as long as the repair takes.
  private async freezeAll(goodsId: number, buckets: SaleKeys[], token: string): Promise<void> {
    const frozen = await Promise.all(
      buckets.map((keys) => this.scripts.freeze(keys, 'freeze', token, REPAIR_FREEZE_MS)),
    );
    if (frozen.includes(false)) {
      throw new UnavailableError(`Another repair of goods ${goodsId} is under way`);
    }
  }

  private async heldThroughout(buckets: SaleKeys[], token: string): Promise<boolean> {
    const held = await Promise.all(buckets.map((keys) => this.scripts.freeze(keys, 'held', token)));
    return !held.includes(false);
  }

  /** Best effort per bucket: one left frozen lapses on its own (REPAIR_FREEZE_MS). */
  private async thawAll(buckets: SaleKeys[], token: string): Promise<void> {
    await Promise.all(
      buckets.map((keys) => this.scripts.freeze(keys, 'thaw', token).catch(() => false)),
    );
  }

  /** The dry pass over every bucket, then the real one (see rebuild). */
  private async rebuildBuckets(
    buckets: SaleKeys[],
    totalStock: number,
    completedSince: number,
    activeOrders: ActiveOrderRef[],
    cancelledOrderNos: string[],
  ): Promise<RebuiltSale | null> {
    const byHome = buckets.map(() => [] as ActiveOrderRef[]);
    for (const order of activeOrders) byHome[homeBucket(order.userId, buckets.length)].push(order);
    const used: number[] = [];
    for (const [bucket, keys] of buckets.entries()) {
      const dry = await this.scripts.rebuild(keys, 0, completedSince, byHome[bucket], [], true);
      if (!dry) return null;
      used.push(dry.usedQuantity);
    }
    const left = Math.max(0, totalStock - used.reduce((sum, quantity) => sum + quantity, 0));
    const shares = splitEvenly(left, buckets.length);
    const rebuilt = { stock: 0, usedQuantity: 0, buyerCount: 0 };
    for (const [bucket, keys] of buckets.entries()) {
      const part = await this.scripts.rebuild(
        keys,
        used[bucket] + shares[bucket],
        completedSince,
        byHome[bucket],
        cancelledOrderNos,
      );
      if (!part) return null;
      rebuilt.stock += part.stock;
      rebuilt.usedQuantity += part.usedQuantity;
      rebuilt.buyerCount += part.buyerCount;
    }
    return rebuilt;
  }

  /**
   * Stock may be back: every instance drops its sold-out memo. Best effort, after the stock is
   * back for real: a lost announcement only keeps the memo until it lapses (SOLD_OUT_MEMO_MS).
   */
  private async stockBack(goodsId: number): Promise<void> {
    await this.soldOut.announceStockBack(goodsId).catch(() => undefined);
  }

  /**
   * The clock (epoch ms) the Lua scripts stamp this sale's records with: that of the server
   * holding the sale (on a cluster, the master of its slot; masters' clocks may differ). With
   * several buckets, the earliest of their servers' clocks.
   */
  async serverTimeMs(goodsId: number): Promise<number> {
    const buckets = await this.bucketsOf(goodsId);
    if (buckets.length === 1) return this.scripts.serverTimeMs(buckets[0].stock);
    // The earliest of the buckets' masters: "since then" then covers every bucket's records.
    let earliest = Infinity;
    for (const keys of buckets) {
      earliest = Math.min(earliest, await this.scripts.serverTimeMs(keys.stock));
    }
    return earliest;
  }

  /** The clock the scripts stamp one bucket's records with (its outbox, its loans). */
  bucketServerTimeMs(keys: SaleKeys): Promise<number> {
    return this.scripts.serverTimeMs(keys.stock);
  }

  /** The sale's end as Redis holds it (epoch ms), or null when it is not preheated. */
  async saleEndAt(goodsId: number): Promise<number | null> {
    const [first] = await this.bucketsOf(goodsId);
    const value = await this.redis.hget(first.meta, 'endAt');
    return value === null ? null : Number(value);
  }

  /** Remaining stock in Redis (over every bucket), or null when the sale is not preheated. */
  async remaining(goodsId: number): Promise<number | null> {
    let total = 0;
    for (const keys of await this.bucketsOf(goodsId)) {
      const value = await this.redis.get(keys.stock);
      if (value === null) return null;
      total += Number(value);
    }
    return total;
  }

  async result(goodsId: number, userId: number): Promise<PurchaseResult | null> {
    const keys = await this.homeKeys(goodsId, userId);
    const raw = await this.redis.hget(keys.results, String(userId));
    return raw === null ? null : (JSON.parse(raw) as PurchaseResult);
  }

  /**
   * Drops everything Redis holds for a sale that is over. Refused (false) while purchases are
   * still on their way to MySQL: their bookkeeping must outlive them.
   */
  async evict(goodsId: number): Promise<boolean> {
    const buckets = await this.bucketsOf(goodsId);
    for (const keys of buckets) {
      if ((await this.redis.hlen(keys.inflight)) > 0) return false;
    }
    await this.forget(goodsId);
    await this.redis.srem(SALES_INDEX_KEY, String(goodsId));
    return true;
  }

  /**
   * After a Redis restart or failover: true for the one instance that gets to wipe the sales
   * this Redis holds (whatever survived is a snapshot older than the truth); false for the others
   * while it is at it, and once it is done. The claim is a lease: if its holder dies mid-wipe, the
   * claim lapses and another instance wipes.
   */
  async claimRecovery(marker: string, token: string, leaseMs: number): Promise<boolean> {
    if ((await this.redis.set(marker, token, 'PX', leaseMs, 'NX')) === 'OK') return true;
    // Its holder's next attempt renews it.
    if ((await this.redis.get(marker)) !== token) return false;
    return (await this.redis.pexpire(marker, leaseMs)) === 1;
  }

  /** Whether the claim `token` made on the restart's wipe is still held (not lapsed, not done). */
  async holdsRecovery(marker: string, token: string): Promise<boolean> {
    return (await this.redis.get(marker)) === token;
  }

  /** The survivors of this Redis server are wiped: sales may be rebuilt and sold again. */
  async markRecovered(marker: string): Promise<void> {
    await this.redis.set(marker, 'wiped', 'EX', 86_400);
  }

  /** `marker`: recoveryKey() of the restart. */
  async isRecovered(marker: string): Promise<boolean> {
    return (await this.redis.get(marker)) === 'wiped';
  }

  /**
   * Lists again, in the index of preheated sales, every sale some Redis server holds (by its
   * meta key, found with SCAN on every master): the index was lost with the server that held it.
   */
  async reindexSales(): Promise<void> {
    const found = (await scanKeys(this.redis, 'seckill:{*}:meta'))
      .map((key) => /^seckill:\{(\d+)(?:\.\d+)?\}:meta$/.exec(key)?.[1])
      .filter((id): id is string => id !== undefined);
    const ids = [...new Set(found)];
    for (let i = 0; i < ids.length; i += 1_000) {
      await this.redis.sadd(SALES_INDEX_KEY, ...ids.slice(i, i + 1_000));
    }
  }

  /**
   * Drops a sale's keys unconditionally (they are about to be rebuilt from MySQL). `keepVoided`:
   * the request ids given up stay (a void is final: the late message of a purchase answered 503
   * is still dropped after the rebuild).
   */
  async forget(goodsId: number, { keepVoided = false } = {}): Promise<void> {
    const buckets = await this.bucketsOf(goodsId);
    const sets = buckets.length === 1 ? buckets : [saleKeys(goodsId), ...buckets];
    for (const keys of sets) {
      const names = Object.values(keys).filter(
        (key): key is string => typeof key === 'string' && !(keepVoided && key === keys.voided),
      );
      // One DEL per bucket: a cluster refuses a DEL whose keys are in different slots.
      await this.redis.del(...names);
    }
  }

  /** Goods ids that were ever preheated on this Redis (the sweeper walks these). */
  async preheatedSales(): Promise<number[]> {
    const members = await this.redis.smembers(SALES_INDEX_KEY);
    return members.map(Number).filter((id) => Number.isSafeInteger(id) && id > 0);
  }

  /** Accepted purchases whose publish was not confirmed before `olderThan` (epoch ms). */
  /** The keys of every bucket of the sale (one for most sales), for the sweepers. */
  buckets(goodsId: number): Promise<SaleKeys[]> {
    return this.bucketsOf(goodsId);
  }

  async staleOutbox(
    keys: SaleKeys,
    olderThan: number,
    limit: number,
  ): Promise<{ requestId: string; message: string | null }[]> {
    const requestIds = await this.redis.zrangebyscore(keys.outbox, 0, olderThan, 'LIMIT', 0, limit);
    if (requestIds.length === 0) return [];
    const messages = await this.redis.hmget(keys.inflight, ...requestIds);
    return requestIds.map((requestId, index) => ({ requestId, message: messages[index] }));
  }

  /** The broker confirmed the message: the sweeper must not publish it again. */
  async markPublished(keys: SaleKeys, requestIds: string[]): Promise<void> {
    if (requestIds.length === 0) return;
    await this.redis.zrem(keys.outbox, ...requestIds);
  }

  async forgetOldVoided(keys: SaleKeys, now: number): Promise<void> {
    await this.redis.zremrangebyscore(keys.voided, 0, now - VOIDED_RETENTION_MS);
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }
}

/** `total` over `parts` buckets as evenly as whole units go, the remainder to the first ones. */
export function splitEvenly(total: number, parts: number): number[] {
  const base = Math.floor(total / parts);
  const extra = total - base * parts;
  return Array.from({ length: parts }, (_, index) => base + (index < extra ? 1 : 0));
}
