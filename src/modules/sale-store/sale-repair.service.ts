import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { UnavailableError } from '../../common/errors/domain-error.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';
import { RepairScripts, type ActiveOrderRef, type RedisSaleSnapshot } from './repair.scripts.js';
import { homeBucket } from '../../common/stock-buckets.js';
import { BucketCountsStore, splitEvenly } from './bucket-counts.store.js';
import { PurchaseLedgerStore } from './purchase-ledger.store.js';
import { SaleReadsStore } from './sale-reads.store.js';
import { SoldOutMemoStore } from './sold-out-memo.store.js';
import { StockLoansStore } from './stock-loans.store.js';

export type { ActiveOrderRef };

export interface RebuiltSale {
  stock: number;
  usedQuantity: number;
  buyerCount: number;
}

/**
 * How long a repair's freeze of a sharded goods holds unless thawed: only a repairer that died
 * mid-repair leaves it to lapse (the sale then answers 503 that long). A repair takes a few
 * round trips per bucket; one that outlasts this finds its freeze broken and runs again.
 */
const REPAIR_FREEZE_MS = 30_000;
/** Runs of a frozen repair before it gives up (each outlasting REPAIR_FREEZE_MS). */
const REPAIR_ATTEMPTS = 3;

/**
 * The reconcile's side of the sale's Redis state: the snapshot it compares with MySQL, the
 * restocks it finds missing, and the rebuild that repairs Redis from MySQL while the sale sells.
 */
@Injectable()
export class SaleRepairService {
  private readonly logger = new Logger(SaleRepairService.name);

  constructor(
    private readonly scripts: RepairScripts,
    private readonly counts: BucketCountsStore,
    private readonly loans: StockLoansStore,
    private readonly soldOut: SoldOutMemoStore,
    private readonly ledger: PurchaseLedgerStore,
    private readonly reads: SaleReadsStore,
  ) {}

  /** The sale's Redis clock, read before MySQL's active orders for a rebuild's `completedSince`. */
  serverTimeMs(goodsId: number): Promise<number> {
    return this.reads.serverTimeMs(goodsId);
  }

  /**
   * Which of these cancelled orders Redis has not given back yet: in no bucket's restocked set
   * (a restock marks its buyer's home bucket; a preheat or rebuild marks them all).
   */
  async notYetRestocked(goodsId: number, orderNos: string[]): Promise<Set<string>> {
    const pending = new Set<string>(orderNos);
    for (const keys of await this.counts.buckets(goodsId)) {
      const left = [...pending];
      for (let i = 0; i < left.length; i += 1_000) {
        const chunk = left.slice(i, i + 1_000);
        const flags = await this.scripts.restockedAmong(keys, chunk);
        chunk.forEach((orderNo, index) => flags[index] && pending.delete(orderNo));
      }
    }
    return pending;
  }

  /** A cancelled order the reconcile found not given back (PurchaseLedgerStore.restock). */
  restock(goodsId: number, orderNo: string, userId: number, quantity: number) {
    return this.ledger.restock(goodsId, orderNo, userId, quantity);
  }

  /**
   * The sale's Redis side summed over its buckets (each read atomically, one after the other).
   * A loan not recorded at home yet is stock taken but not yet any purchase: it is counted in
   * flight (it becomes one, or goes back to its bucket). A recorded one is not counted again:
   * its purchase is counted where it is now (in flight at home, an order, or its stock back at
   * home), only its drop is outstanding.
   */
  async snapshot(goodsId: number): Promise<Omit<RedisSaleSnapshot, 'loans'>> {
    const buckets = await this.counts.buckets(goodsId);
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
        const recorded = await this.scripts.loanRecorded(buckets[loan.home], loan.requestId);
        if (!recorded) total.inFlightQuantity += loan.quantity;
      }
    }
    return total;
  }

  /**
   * A repair's rebuild, while the sale sells. `completedSince`: serverTimeMs read
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
    const buckets = await this.counts.buckets(goodsId);
    if (buckets.length === 1) {
      const rebuilt = await this.scripts.rebuild(
        buckets[0],
        totalStock,
        completedSince,
        activeOrders,
        cancelledOrderNos,
      );
      await this.soldOut.stockBack(goodsId);
      return rebuilt;
    }
    for (let attempt = 1; attempt <= REPAIR_ATTEMPTS; attempt++) {
      const token = randomUUID();
      const startedAt = Date.now();
      try {
        await this.freezeAll(goodsId, buckets, token);
        await this.loans.sweep(goodsId, 0, Number.MAX_SAFE_INTEGER);
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
        await this.soldOut.stockBack(goodsId);
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
}
