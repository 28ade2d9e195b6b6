import { Injectable } from '@nestjs/common';
import { LuaScripts, type ScriptName } from './lua-scripts.js';
import type { SaleKeys } from './seckill-keys.js';

export enum DeductCode {
  Accepted = 0,
  NotPreheated = 1,
  SaleNotStarted = 2,
  SaleEnded = 3,
  SoldOut = 4,
  AlreadyPurchased = 5,
  OverLimit = 6,
  Replayed = 7,
  Voided = 8,
  /** A repair is rebuilding the goods' buckets (lua/seckill-freeze.lua): nothing changed. */
  Frozen = 9,
}

export enum ReleaseCode {
  NotInFlight = 0,
  Released = 1,
  Claimed = 2,
  Completed = 3,
  /** Only with `voidOnly`: the request was recorded (on its loan, or it is in flight), left alone. */
  Recorded = 4,
}

export enum LoanCode {
  NotPreheated = -1,
  Empty = 0,
  Lent = 1,
  Frozen = 2,
}

/** Stock a bucket lent and that is not settled yet (see lua/seckill-loan.lua). */
export interface OpenLoan {
  requestId: string;
  quantity: number;
  home: number;
}

export enum RestockCode {
  AlreadyRestocked = 0,
  Restocked = 1,
  NotPreheated = 2,
}

export interface RedisSaleSnapshot {
  /** null when Redis does not hold the sale */
  stock: number | null;
  buyersQuantity: number;
  inFlightQuantity: number;
  inFlightCount: number;
  loans: OpenLoan[];
}

export interface ActiveOrderRef {
  requestId: string;
  userId: number;
  quantity: number;
  orderNo: string;
}

export interface CompletedOrder {
  requestId: string;
  userId: number;
  orderNo: string;
  /** Taken again if the purchase was released meanwhile (see lua/seckill-complete.lua). */
  quantity: number;
}

/**
 * A forced release (lua/seckill-release.lua): the claim holder of the consumer giving up its copy
 * of the request (lua/seckill-claim.lua), or false for a release of a request no consumer claimed.
 */
export type ReleaseForce = false | string;

/** Fields or members per command of a load: each command stays a modest size. */
const LOAD_CHUNK = 1_000;

/**
 * The sale's own scripts (lua/seckill-*.lua), typed: what they take, their replies decoded. The
 * other features' wrappers live with those features; all run through LuaScripts.
 */
@Injectable()
export class SeckillScripts {
  constructor(private readonly lua: LuaScripts) {}

  private call(name: ScriptName, ...args: (string | number)[]): Promise<unknown> {
    return this.lua.run(name, ...args);
  }

  async deduct(
    keys: SaleKeys,
    userId: number,
    quantity: number,
    requestId: string,
    message: string,
    borrowedFrom?: number,
  ): Promise<{ code: DeductCode; remaining: number }> {
    const [code, remaining] = (await this.call(
      'seckillDeduct',
      keys.stock,
      keys.meta,
      keys.buyers,
      keys.inflight,
      keys.outbox,
      keys.results,
      keys.voided,
      keys.borrowed,
      userId,
      quantity,
      requestId,
      message,
      borrowedFrom === undefined ? '' : 'borrowed',
      borrowedFrom ?? '',
    )) as [number, number];
    return { code, remaining };
  }

  /** `voidOnly`: the loan sweeper's question (see the script's ARGV[5]). */
  async release(
    keys: SaleKeys,
    requestId: string,
    force: ReleaseForce,
    reason: string,
    userId?: number,
    voidOnly = false,
  ): Promise<ReleaseCode> {
    return (await this.call(
      'seckillRelease',
      keys.stock,
      keys.buyers,
      keys.inflight,
      keys.outbox,
      keys.claims,
      keys.voided,
      keys.results,
      keys.borrowed,
      requestId,
      force === false ? '' : force,
      reason,
      userId ?? '',
      voidOnly ? '1' : '0',
    )) as ReleaseCode;
  }

  /** Takes stock from this bucket for a purchase recorded in `home` (lua/seckill-loan.lua). */
  async loan(
    keys: SaleKeys,
    requestId: string,
    quantity: number,
    userId: number,
    home: number,
  ): Promise<{ code: LoanCode; remaining: number }> {
    const [code, remaining] = (await this.call(
      'seckillLoan',
      keys.stock,
      keys.loans,
      keys.meta,
      keys.voided,
      requestId,
      quantity,
      userId,
      home,
    )) as [number, number];
    return { code, remaining };
  }

  /**
   * A repair's freeze of one bucket (lua/seckill-freeze.lua): `freeze` (for `lapseMs`, false
   * when another repair's freeze is in force), `held` (still this token's, without a break),
   * `thaw` (cleared, when it was this token's).
   */
  async freeze(
    keys: SaleKeys,
    op: 'freeze' | 'held' | 'thaw',
    token: string,
    lapseMs = 0,
  ): Promise<boolean> {
    return (await this.call('seckillFreeze', keys.meta, op, token, lapseMs)) === 1;
  }

  /** Closes a loan, giving its stock back or not; the quantity closed now, 0 if closed before. */
  async settleLoan(keys: SaleKeys, requestId: string, giveBack: boolean): Promise<number> {
    return (await this.call(
      'seckillLoanSettle',
      keys.stock,
      keys.loans,
      keys.voided,
      requestId,
      giveBack ? '1' : '0',
    )) as number;
  }

  /**
   * Returns, per request id in order, true when it may be written, false when it was voided.
   * Claims (or renews) them for `holder` for `leaseMs`.
   */
  async claim(
    keys: SaleKeys,
    requestIds: string[],
    holder: string,
    leaseMs: number,
  ): Promise<boolean[]> {
    if (requestIds.length === 0) return [];
    const flags = (await this.call(
      'seckillClaim',
      keys.inflight,
      keys.claims,
      keys.voided,
      holder,
      leaseMs,
      ...requestIds,
    )) as number[];
    return flags.map((flag) => flag === 1);
  }

  /**
   * `completed`: how many were still in flight; `retaken`: the request ids whose release was
   * undone (released meanwhile, their order landed all the same).
   */
  async complete(
    keys: SaleKeys,
    orders: CompletedOrder[],
  ): Promise<{ completed: number; retaken: string[] }> {
    if (orders.length === 0) return { completed: 0, retaken: [] };
    const args = orders.flatMap((order) => [
      order.requestId,
      order.userId,
      order.orderNo,
      order.quantity,
    ]);
    const [completed, retaken] = (await this.call(
      'seckillComplete',
      keys.inflight,
      keys.outbox,
      keys.claims,
      keys.results,
      keys.completed,
      keys.voided,
      keys.stock,
      keys.buyers,
      ...args,
    )) as [number, string[]];
    return { completed, retaken };
  }

  async restock(
    keys: SaleKeys,
    orderNo: string,
    userId: number,
    quantity: number,
  ): Promise<RestockCode> {
    return (await this.call(
      'seckillRestock',
      keys.stock,
      keys.buyers,
      keys.restocked,
      orderNo,
      userId,
      quantity,
    )) as RestockCode;
  }

  async snapshot(keys: SaleKeys): Promise<RedisSaleSnapshot> {
    const [stock, buyersQuantity, inFlightQuantity, inFlightCount, lent, held] = (await this.call(
      'seckillSnapshot',
      keys.stock,
      keys.buyers,
      keys.inflight,
      keys.loans,
      keys.meta,
    )) as [number, number, number, number, (string | number)[], number];
    const loans: OpenLoan[] = [];
    for (let i = 0; i < lent.length; i += 3) {
      loans.push({
        requestId: String(lent[i]),
        quantity: Number(lent[i + 1]),
        home: Number(lent[i + 2]),
      });
    }
    return {
      stock: held === 1 ? stock : null,
      buyersQuantity,
      inFlightQuantity,
      inFlightCount,
      loans,
    };
  }

  /**
   * Returns null when the sale is not preheated (no meta in Redis). `dryRun`: only counts what
   * is used (stock 0 in the answer), writes nothing.
   */
  async rebuild(
    keys: SaleKeys,
    totalStock: number,
    completedSince: number,
    activeOrders: ActiveOrderRef[],
    cancelledOrderNos: string[] = [],
    dryRun = false,
  ): Promise<{ stock: number; usedQuantity: number; buyerCount: number } | null> {
    const [stock, usedQuantity, buyerCount] = (await this.call(
      'seckillRebuild',
      keys.stock,
      keys.buyers,
      keys.inflight,
      keys.completed,
      keys.meta,
      keys.restocked,
      keys.loans,
      totalStock,
      completedSince,
      activeOrders.length,
      dryRun ? '1' : '0',
      ...activeOrders.flatMap((order) => [
        order.requestId,
        order.userId,
        order.quantity,
        order.orderNo,
      ]),
      ...cancelledOrderNos,
    )) as [number, number, number];
    return stock < 0 ? null : { stock, usedQuantity, buyerCount };
  }

  /**
   * Loads one bucket in one MULTI: its buyers and restocked order numbers (a rebuild's history,
   * none for a first preheat), then lua/seckill-preheat.lua. A Redis that restarts during a load
   * gets the whole bucket or none of it: never a stock without the buyers written into the
   * server before it (which a purchase would take for a sale loaded with none). A `refresh`
   * (the caller found the sale loaded, so brings no history) writes nothing to a bucket Redis
   * has lost since (`lost`).
   */
  async preheat(
    keys: SaleKeys,
    sale: { totalStock: number; stock: number; startAt: Date; endAt: Date; perUserLimit: number },
    history: { buyers: { userId: number; quantity: number }[]; restocked: string[] } = {
      buyers: [],
      restocked: [],
    },
    { refresh = false } = {},
  ): Promise<{ loaded: boolean; lost: boolean; stock: number }> {
    const load = this.lua.multi();
    for (let i = 0; i < history.buyers.length; i += LOAD_CHUNK) {
      const chunk = history.buyers.slice(i, i + LOAD_CHUNK);
      load.hset(keys.buyers, Object.fromEntries(chunk.map((b) => [String(b.userId), b.quantity])));
    }
    for (let i = 0; i < history.restocked.length; i += LOAD_CHUNK) {
      load.sadd(keys.restocked, ...history.restocked.slice(i, i + LOAD_CHUNK));
    }
    // Queued on the transaction (a chainable, not a promise): its reply comes with exec().
    this.lua.queue(
      load,
      'seckillPreheat',
      keys.stock,
      keys.meta,
      sale.totalStock,
      sale.stock,
      sale.startAt.getTime(),
      sale.endAt.getTime(),
      sale.perUserLimit,
      refresh ? 1 : 0,
    );
    const replies = (await load.exec()) ?? [];
    const failed = replies.find(([error]) => error !== null);
    if (failed || replies.length === 0) {
      throw failed?.[0] ?? new Error('the sale load was discarded (Redis lost the transaction)');
    }
    const [loaded, stock] = replies.at(-1)![1] as [number, number];
    return { loaded: loaded === 1, lost: loaded === -1, stock };
  }

  /** The clock (epoch ms) of the server holding `key`: on a cluster, the master of its slot. */
  serverTimeMs(key: string): Promise<number> {
    return this.lua.serverTimeMs(key);
  }
}
