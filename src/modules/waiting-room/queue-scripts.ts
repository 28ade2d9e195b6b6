import { Injectable } from '@nestjs/common';
import { LuaScripts } from '../../infra/redis/lua-scripts.js';
import { queueKeys, resultChannel, saleKeys } from '../../infra/redis/seckill-keys.js';

/**
 * The most one tick call admits: each admission costs the shuffle's inverse (about 10 µs of
 * Redis), so that one call holds Redis some 20 ms at most; the caller calls again while its
 * batches come back full.
 */
export const ADMIT_BATCH = 2_000;

/** lua/queue-join.lua's answers. */
export enum JoinCode {
  Joined = 0,
  Kept = 1,
  NotOpen = 2,
  Ended = 3,
}

/** lua/queue-status.lua's states, in its order. */
export const QUEUE_STATES = [
  'NOT_JOINED',
  'WAITING',
  'ADMITTED',
  'EXPIRED',
  'SOLD_OUT',
  'PURCHASED',
] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** A buyer's standing as lua/queue-status.lua reads it. */
export interface QueueStanding {
  state: QueueState;
  /** Buyers waiting ahead; null before the shuffle's seed is drawn. */
  ahead: number | null;
  /** ms, Redis's clock; ADMITTED only. */
  admittedUntil: number | null;
  admittedLast10s: number;
  /** Places admitted so far: a placed WAITING buyer's place in the line is head + ahead. */
  head: number;
}

/** What every waiting buyer's standing follows from (lua/queue-room.lua). */
export interface RoomState {
  head: number;
  /** The seed is drawn: every place is fixed. */
  shuffled: boolean;
  /** null when the sale is not in Redis. */
  stock: number | null;
  inflight: number;
  admittedLast10s: number;
  /** Buyers not admitted yet. */
  waiting: number;
  /** Admitted buyers who have neither bought nor lapsed. */
  deciding: number;
  expired: number;
}

export interface TickParams {
  startAt: number;
  endAt: number;
  admitPerSecond: number;
  admissionTtlMs: number;
  stockFactor: number;
  seedCandidate: string;
  paused: boolean;
}

export interface TickResult {
  admitted: number;
  lapsed: number;
  /** This call drew the shuffle's seed: the order is fixed from now on. */
  drawn: boolean;
}

/** The waiting room's keys in the order lua/queue-tick.lua and queue-status.lua take them. */
function roomKeys(goodsId: number): string[] {
  const keys = queueKeys(goodsId);
  return [keys.state, keys.pre, keys.line, keys.admitted, keys.expired, keys.admits];
}

/** The waiting room's scripts (lua/queue-join, -tick, -status.lua), typed. */
@Injectable()
export class QueueScripts {
  constructor(private readonly lua: LuaScripts) {}

  async join(
    goodsId: number,
    userId: number,
    window: { opensAt: number; startAt: number; endAt: number },
  ): Promise<JoinCode> {
    const keys = queueKeys(goodsId);
    return (await this.lua.run(
      'queueJoin',
      keys.state,
      keys.pre,
      keys.line,
      userId,
      window.opensAt,
      window.startAt,
      window.endAt,
      // A queue sale keeps its stock in one bucket.
      resultChannel(goodsId, userId, 1),
    )) as JoinCode;
  }

  async tick(goodsId: number, params: TickParams): Promise<TickResult> {
    const [admitted, lapsed, drawn] = (await this.lua.run(
      'queueTick',
      ...roomKeys(goodsId),
      saleKeys(goodsId).stock,
      params.startAt,
      params.endAt,
      params.admitPerSecond,
      params.admissionTtlMs,
      params.stockFactor,
      params.seedCandidate,
      params.paused ? '1' : '0',
      ADMIT_BATCH,
    )) as [number, number, number];
    return { admitted, lapsed, drawn: drawn === 1 };
  }

  async status(goodsId: number, userId: number): Promise<QueueStanding> {
    const sale = saleKeys(goodsId);
    const [state, ahead, admittedUntil, admittedLast10s, head] = (await this.lua.run(
      'queueStatus',
      ...roomKeys(goodsId),
      sale.stock,
      sale.inflight,
      sale.buyers,
      userId,
    )) as [number, number, number, number, number];
    const name = QUEUE_STATES[state];
    if (name === undefined) throw new Error(`queue-status answered an unknown state ${state}`);
    return {
      state: name,
      ahead: name === 'WAITING' && ahead >= 0 ? ahead : null,
      admittedUntil: name === 'ADMITTED' ? admittedUntil : null,
      admittedLast10s,
      head,
    };
  }

  async room(goodsId: number): Promise<RoomState> {
    const keys = queueKeys(goodsId);
    const sale = saleKeys(goodsId);
    const [head, shuffled, stock, inflight, admittedLast10s, waiting, deciding, expired] =
      (await this.lua.run(
        'queueRoom',
        keys.state,
        keys.admits,
        sale.stock,
        sale.inflight,
        keys.pre,
        keys.line,
        keys.admitted,
        keys.expired,
      )) as number[];
    return {
      head,
      shuffled: shuffled === 1,
      stock: stock < 0 ? null : stock,
      inflight,
      admittedLast10s,
      waiting,
      deciding,
      expired,
    };
  }
}
