import { Injectable } from '@nestjs/common';
import { DomainError, orUnavailable } from '../../common/errors/domain-error.js';
import { GoodsService } from '../goods/goods.service.js';
import type { QueueStanding } from './queue.scripts.js';
import { isDrawSale, type DrawSale } from './room-sale.js';
import { isFinal, WaitingRoomService, type JoinReceipt } from './waiting-room.service.js';

/** An entry's standing in a draw sale (the contract's). */
export const ENTRY_STATES = [
  'NOT_ENTERED',
  'ENTERED',
  'SELECTED',
  'WAITLISTED',
  'NOT_SELECTED',
  'PURCHASED',
  'EXPIRED',
] as const;
export type EntryState = (typeof ENTRY_STATES)[number];

/** GET /api/v1/seckill/:goodsId/entry's answer. */
export interface EntryStatus {
  state: EntryState;
  /**
   * WAITLISTED: the entry's rank in the draw's order (1: the first entry drawn), which a right
   * reaches once every entry ranked before it had one; null otherwise.
   */
  rank: number | null;
  /** WAITLISTED: entries ranked before it still waiting for a right. */
  ahead: number | null;
  /** SELECTED: buy before this. */
  rightUntil?: string;
  /** The state can no longer change. */
  final: boolean;
}

/**
 * An entry's standing from its room standing (the draw sale's room is the queue engine's: an
 * entry is a join, a purchase right an admission). NOT_SELECTED once no right can reach it any
 * more: the stock gone with no unpaid order left to come back, or the sale ended.
 */
export function entryStatusOf(standing: QueueStanding, unitsMayReturn: boolean): EntryStatus {
  const final = isFinal(standing, unitsMayReturn);
  const none = { rank: null, ahead: null, final };
  const { ahead, head } = standing;
  switch (standing.state) {
    case 'NOT_JOINED':
      return { state: 'NOT_ENTERED', ...none };
    case 'ADMITTED':
      return {
        state: 'SELECTED',
        ...none,
        rightUntil: new Date(standing.admittedUntil ?? Date.now()).toISOString(),
      };
    case 'EXPIRED':
    case 'PURCHASED':
      return { state: standing.state, ...none };
    case 'WAITING':
    case 'SOLD_OUT':
      if (final) return { state: 'NOT_SELECTED', ...none };
      // Not placed yet: the draw has not ranked the entries.
      if (ahead === null) {
        return standing.state === 'WAITING'
          ? { state: 'ENTERED', ...none }
          : { state: 'WAITLISTED', ...none };
      }
      return { state: 'WAITLISTED', rank: head + ahead + 1, ahead, final };
  }
}

/**
 * A `draw` sale's entries, as the entrant meets them: entering once within the window (the same
 * join as a queue sale's, lua/queue-join.lua, closed at entriesCloseAt) and the standing. The draw
 * and the rights are AdmissionPacerService's (a right is an admission), the purchase gate the
 * deduct's (lua/seckill-deduct.lua: NOT_SELECTED).
 */
@Injectable()
export class DrawEntryService {
  constructor(
    private readonly goods: GoodsService,
    private readonly room: WaitingRoomService,
  ) {}

  /** Enters (or keeps the entry); with SECKILL_REQUIRE_CHALLENGE on, a solved challenge. */
  async enter(
    goodsId: number,
    userId: number,
    challenge?: string,
    address: string | null = null,
  ): Promise<EntryStatus & { receipt: JoinReceipt }> {
    const sale = await this.drawSale(goodsId);
    const closed = () =>
      new DomainError(
        'ENTRIES_CLOSED',
        `Entries are taken from ${sale.queueOpensAt.toISOString()} until ${sale.entriesCloseAt.toISOString()}`,
      );
    const { receipt } = await this.room.place(sale, userId, challenge, address, {
      notOpen: closed,
      closed,
    });
    return { ...(await this.status(goodsId, userId)), receipt };
  }

  async status(goodsId: number, userId: number): Promise<EntryStatus> {
    const sale = await this.drawSale(goodsId);
    return this.answer(sale, await this.standing(sale, userId));
  }

  /** The room standing, with a waitlisted entry's place worked out (its rank). */
  standing(sale: DrawSale, userId: number): Promise<QueueStanding> {
    return this.room.standing(sale, userId, { place: true });
  }

  async answer(sale: DrawSale, standing: QueueStanding): Promise<EntryStatus> {
    return entryStatusOf(standing, await this.room.unitsMayReturn(sale, standing));
  }

  /** The goods, when it is a draw sale (404 GOODS_NOT_FOUND, 409 ENTRIES_CLOSED otherwise). */
  async drawSale(goodsId: number): Promise<DrawSale> {
    const goods = await orUnavailable('MySQL', () => this.goods.findCached(goodsId));
    if (!isDrawSale(goods)) {
      throw new DomainError(
        'ENTRIES_CLOSED',
        `Goods ${goodsId} is not a draw: it takes no entries (admission ${goods.admission})`,
      );
    }
    return goods;
  }
}
