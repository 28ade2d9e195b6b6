import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';
import type { Trace } from '../../infra/tracing/tracing.js';

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
  /** A queue sale, and the buyer holds no admission in force: nothing changed. */
  NotAdmitted = 10,
  /** A draw sale, and the buyer holds no purchase right in force: nothing changed. */
  NotSelected = 11,
}

export enum ReleaseCode {
  NotInFlight = 0,
  Released = 1,
  Claimed = 2,
  Completed = 3,
  /** Only with `voidOnly`: the request was recorded (on its loan, or it is in flight), left alone. */
  Recorded = 4,
  /** Only asked (`askRelease`): no other consumer's claim would refuse the release. */
  Releasable = 5,
}

export enum RestockCode {
  AlreadyRestocked = 0,
  Restocked = 1,
  NotPreheated = 2,
}

/** lua/seckill-retake.lua's answers (to "give-back": Already is "held none", Retaken "given back"). */
export enum RetakeCode {
  Already = 0,
  Retaken = 1,
  Kept = 2,
  NotPreheated = 3,
  SoldOut = 4,
  BuyerHolds = 5,
  Frozen = 6,
  /** On a loan: the loan sweeper voided this attempt's loan first (it gave the loan back). */
  LoanVoided = 7,
}

/** A late payment's order, as the retake counts it. */
export interface RetakenOrder {
  orderNo: string;
  requestId: string;
  userId: number;
  quantity: number;
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

/**
 * The purchase ledger's scripts (lua/seckill-deduct, -release, -claim, -complete, -restock.lua),
 * typed: what they take, their replies decoded.
 */
@Injectable()
export class LedgerScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  async deduct(
    keys: SaleKeys,
    userId: number,
    quantity: number,
    requestId: string,
    message: string,
    borrowedFrom?: number,
    trace?: Trace,
  ): Promise<{ code: DeductCode; remaining: number }> {
    const [code, remaining] = (await this.lua.runIn(
      trace,
      'seckillDeduct',
      keys.stock,
      keys.meta,
      keys.buyers,
      keys.inflight,
      keys.outbox,
      keys.results,
      keys.voided,
      keys.borrowed,
      keys.admitted,
      keys.queueClock,
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
  release(
    keys: SaleKeys,
    requestId: string,
    force: ReleaseForce,
    reason: string,
    userId?: number,
    voidOnly = false,
  ): Promise<ReleaseCode> {
    return this.runRelease(keys, requestId, force, reason, userId, voidOnly ? 'void-only' : '');
  }

  /**
   * Whether a release by `holder` would be refused for another holder's lease (Claimed) or not
   * (Releasable), changing nothing (the script's ARGV[6]).
   */
  askRelease(
    keys: SaleKeys,
    requestId: string,
    holder: string,
  ): Promise<ReleaseCode.Claimed | ReleaseCode.Releasable> {
    return this.runRelease(keys, requestId, holder, '', undefined, 'ask') as Promise<
      ReleaseCode.Claimed | ReleaseCode.Releasable
    >;
  }

  private async runRelease(
    keys: SaleKeys,
    requestId: string,
    force: ReleaseForce,
    reason: string,
    userId: number | undefined,
    mode: '' | 'void-only' | 'ask',
  ): Promise<ReleaseCode> {
    return (await this.lua.run(
      'seckillRelease',
      keys.stock,
      keys.buyers,
      keys.inflight,
      keys.outbox,
      keys.claims,
      keys.voided,
      keys.results,
      keys.borrowed,
      keys.admitted,
      requestId,
      force === false ? '' : force,
      reason,
      userId ?? '',
      mode === 'void-only' ? '1' : '0',
      mode === 'ask' ? '1' : '0',
    )) as ReleaseCode;
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
    const flags = (await this.lua.run(
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
    const [completed, retaken] = (await this.lua.run(
      'seckillComplete',
      keys.inflight,
      keys.outbox,
      keys.claims,
      keys.results,
      keys.completed,
      keys.voided,
      keys.stock,
      keys.buyers,
      keys.admitted,
      ...args,
    )) as [number, string[]];
    return { completed, retaken };
  }

  /** `loan`: "take" with stock already borrowed from another bucket (lua/seckill-retake.lua). */
  async retake(
    keys: SaleKeys,
    mode: 'take' | 'give-back',
    order: RetakenOrder,
    loan?: { id: string; bucket: number },
  ): Promise<RetakeCode> {
    return (await this.lua.run(
      'seckillRetake',
      keys.stock,
      keys.buyers,
      keys.restocked,
      keys.retaken,
      keys.meta,
      keys.borrowed,
      keys.voided,
      mode,
      order.orderNo,
      order.userId,
      order.quantity,
      order.requestId,
      loan?.id ?? '',
      loan?.bucket ?? '',
    )) as RetakeCode;
  }

  async restock(
    keys: SaleKeys,
    orderNo: string,
    userId: number,
    quantity: number,
  ): Promise<RestockCode> {
    return (await this.lua.run(
      'seckillRestock',
      keys.stock,
      keys.buyers,
      keys.restocked,
      orderNo,
      userId,
      quantity,
    )) as RestockCode;
  }
}
