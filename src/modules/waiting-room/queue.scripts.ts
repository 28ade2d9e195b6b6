import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
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
  /** The room is not the journal's (Redis lost or outdated it): it is being restored. */
  Restoring = 4,
  /** A new join from an address that put QUEUE_MAX_ACCOUNTS_PER_ADDRESS accounts in already. */
  TooManyAccounts = 5,
}

/** A join's answer: where the buyer stands (Joined, Kept). */
export interface JoinResult {
  code: JoinCode;
  /** 0: the pre-queue (position: join index), 1: behind it (position: arrival number). */
  line: 0 | 1;
  position: number;
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
  /** Buyers waiting ahead (WAITING, or SOLD_OUT while in line); null before the seed is drawn. */
  ahead: number | null;
  /** ms, Redis's clock; ADMITTED only. */
  admittedUntil: number | null;
  admittedLast10s: number;
  /** Places admitted so far: a placed WAITING buyer's place in the line is head + ahead. */
  head: number;
  /** At or after endAt (Redis's clock): every state is final. */
  ended: boolean;
  /** The room's clock is stopped: the sale cannot sell now (paused, rebuilt, cut off). */
  stopped: boolean;
  /** PURCHASED, and the purchase is still on its way to MySQL (a refusal there undoes it). */
  pending: boolean;
  /** The stock left; null when the sale is not in Redis or the state does not need it. */
  stock: number | null;
  /** Admitted buyers who have neither bought nor lapsed. */
  deciding: number;
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
  /** At or after endAt (Redis's clock). */
  ended: boolean;
  /** The room's clock is stopped: the sale cannot sell now. */
  stopped: boolean;
  /** The room is not the journal's (Redis lost or outdated it): it is being restored. */
  restoring: boolean;
  /** Admissions a purchase used (a draw sale's rights claimed). */
  used: number;
  /** Everyone who joined (a draw sale's entries). */
  joined: number;
}

export interface TickParams {
  /** When the order is drawn (RoomPlan.drawAt): a queue sale's startAt, a draw's entriesCloseAt. */
  drawAt: number;
  endAt: number;
  admitPerSecond: number;
  admissionTtlMs: number;
  stockFactor: number;
  /** The seed, drawn in MySQL first (RoomDrawService): Redis takes it at the draw; "" none. */
  seed: string;
  /** The pre-queue's size the seed was drawn for (Redis takes it only for its own). */
  preSize: number;
  paused: boolean;
  /** Two steps further apart than this stop the room's clock for the gap (nobody reached it). */
  gapMs: number;
  /** An admission's time to buy counts from here at the earliest (RoomPlan.buyFrom). */
  buyFrom: number;
}

export interface TickResult {
  admitted: number;
  lapsed: number;
  /** This call drew the shuffle's seed: the order is fixed from now on. */
  drawn: boolean;
  /** The room's clock is stopped: nobody lapses, nobody is admitted. */
  stopped: boolean;
  /** The room is not the journal's: nothing was done, it must be restored. */
  restoring: boolean;
  /** Places admitted so far, after this call. */
  head: number;
  /** The room's clock at this call. */
  roomMs: number;
  /** The admissions' end (room's clock), for `users`. */
  untilMs: number;
  /** The pre-queue's size the seed orders; before the draw, the join counter. */
  preSize: number;
  /** The admissions this call made, in place order. */
  users: { place: number; userId: number }[];
  /** Past startAt with no seed yet: nothing was done; the caller draws one for `preSize`. */
  undrawn: boolean;
}

/** A page of the pre-queue, as lua/queue-pre-read.lua reads it. */
export interface PreQueuePage {
  /** The room is the journal's; false: nothing else was read (it is being restored). */
  journal: boolean;
  /** Which restore wrote the room: a change means it was written anew. */
  opened: string;
  /** The join counter: every pre-queue index is below it. */
  preSeq: number;
  /** Redis holds a seed. */
  seeded: boolean;
  /** The pre-queue takes no more joins (a seed, or Redis's clock past startAt): preSeq is final. */
  closed: boolean;
  /** The joins from the index asked for, in index order. */
  joins: { index: number; userId: number }[];
}

/** The waiting room's keys in the order lua/queue-tick.lua and queue-status.lua take them. */
function roomKeys(goodsId: number): string[] {
  const keys = queueKeys(goodsId);
  return [keys.state, keys.pre, keys.line, keys.admitted, keys.expired, keys.admits];
}

/** The waiting room's scripts (lua/queue-join, -tick, -status.lua), typed. */
@Injectable()
export class QueueScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  async join(
    goodsId: number,
    userId: number,
    /** startAt: the draw (joins before it are the pre-queue); endAt: the last join. */
    window: { opensAt: number; startAt: number; endAt: number },
    cap: { address: string | null; maxAccounts: number } = { address: null, maxAccounts: 1 },
  ): Promise<JoinResult> {
    const keys = queueKeys(goodsId);
    const [code, line, position] = (await this.lua.run(
      'queueJoin',
      keys.state,
      keys.pre,
      keys.line,
      keys.addresses,
      userId,
      window.opensAt,
      window.startAt,
      window.endAt,
      // A queue sale keeps its stock in one bucket.
      resultChannel(goodsId, userId, 1),
      cap.address ?? '',
      cap.maxAccounts,
    )) as [JoinCode, number, number];
    return { code, line: line === 1 ? 1 : 0, position };
  }

  async tick(goodsId: number, params: TickParams): Promise<TickResult> {
    const [admitted, lapsed, drawn, stopped, head, roomMs, untilMs, preSize, users, undrawn] =
      (await this.lua.run(
        'queueTick',
        ...roomKeys(goodsId),
        saleKeys(goodsId).stock,
        queueKeys(goodsId).clock,
        params.drawAt,
        params.endAt,
        params.admitPerSecond,
        params.admissionTtlMs,
        params.stockFactor,
        params.seed,
        params.paused ? '1' : '0',
        ADMIT_BATCH,
        params.gapMs,
        params.preSize,
        params.buyFrom,
      )) as [number, number, number, number, number, number, number, number, string, number?];
    return {
      admitted,
      lapsed,
      drawn: drawn === 1,
      stopped: stopped !== 0,
      restoring: stopped === -1,
      head,
      roomMs,
      untilMs,
      preSize,
      users:
        users === ''
          ? []
          : users.split(',').map((admission) => {
              const [place, userId] = admission.split(':');
              return { place: Number(place), userId: Number(userId) };
            }),
      undrawn: undrawn === 1,
    };
  }

  /** Up to `limit` joins of the pre-queue from join index `from` (lua/queue-pre-read.lua). */
  async preRead(
    goodsId: number,
    from: number,
    limit: number,
    startAt: number,
  ): Promise<PreQueuePage> {
    const keys = queueKeys(goodsId);
    const [journal, opened, preSeq, seeded, closed, members] = (await this.lua.run(
      'queuePreRead',
      keys.state,
      keys.pre,
      from,
      limit,
      startAt,
    )) as [number, string, number, number, number, string[]];
    const joins: PreQueuePage['joins'] = [];
    for (let i = 0; i < members.length; i += 2) {
      joins.push({ userId: Number(members[i]), index: Number(members[i + 1]) });
    }
    return {
      journal: journal === 1,
      opened,
      preSeq,
      seeded: seeded === 1,
      closed: closed === 1,
      joins,
    };
  }

  /**
   * `endAt` (ms): the sale's end, judged by Redis's clock. Null while the room is being
   * restored (not the journal's). `place`: a SOLD_OUT buyer's place in line too (what a queue
   * stream follows); otherwise its `ahead` is null, which spares the seed's walk when every
   * waiting buyer asks at the last unit.
   */
  async status(
    goodsId: number,
    userId: number,
    endAt: number,
    { place = false }: { place?: boolean } = {},
  ): Promise<QueueStanding | null> {
    const sale = saleKeys(goodsId);
    const [
      state,
      ahead,
      admittedUntil,
      admittedLast10s,
      head,
      ended,
      stopped,
      pending,
      stock,
      deciding,
    ] = (await this.lua.run(
      'queueStatus',
      ...roomKeys(goodsId),
      sale.stock,
      sale.inflight,
      sale.buyers,
      sale.results,
      sale.queueClock,
      userId,
      endAt,
      place ? '1' : '',
    )) as number[];
    if (state === -1) return null;
    const name = QUEUE_STATES[state];
    if (name === undefined) throw new Error(`queue-status answered an unknown state ${state}`);
    const inLine = name === 'WAITING' || name === 'SOLD_OUT';
    return {
      state: name,
      ahead: inLine && ahead >= 0 ? ahead : null,
      admittedUntil: name === 'ADMITTED' ? admittedUntil : null,
      admittedLast10s,
      head,
      ended: ended === 1,
      stopped: stopped === 1,
      pending: pending === 1,
      stock: stock >= 0 && (inLine || name === 'ADMITTED') ? stock : null,
      deciding,
    };
  }

  /** `endAt` (ms): the sale's end, judged by Redis's clock. */
  async room(goodsId: number, endAt: number): Promise<RoomState> {
    const keys = queueKeys(goodsId);
    const sale = saleKeys(goodsId);
    const [
      head,
      shuffled,
      stock,
      inflight,
      admittedLast10s,
      waiting,
      deciding,
      expired,
      ended,
      stopped,
      restoring,
      used,
      joined,
    ] = (await this.lua.run(
      'queueRoom',
      keys.state,
      keys.admits,
      sale.stock,
      sale.inflight,
      keys.pre,
      keys.line,
      keys.admitted,
      keys.expired,
      keys.clock,
      endAt,
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
      ended: ended === 1,
      stopped: stopped === 1,
      restoring: restoring === 1,
      used,
      joined,
    };
  }
}
