import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';

/**
 * A sale with a waiting room, as its row holds it: its room opens at queueOpensAt (a draw sale's
 * entriesOpenAt) and an admission lasts admissionTtlSeconds (a draw sale's claimSeconds).
 */
export type RoomSale = GoodsEntity & {
  admission: 'queue' | 'draw';
  queueOpensAt: Date;
  admissionTtlSeconds: number;
};

/** A `queue` sale: joins until the end, drawn at startAt, admitted at admitPerSecond. */
export type QueueSale = RoomSale & { admission: 'queue'; admitPerSecond: number };

/**
 * A `draw` sale: the same room, whose joins are the entries (taken only until entriesCloseAt),
 * drawn at entriesCloseAt, whose admissions are the purchase rights (given all at once, as many
 * as the stock left times winnersFactor, each lasting claimSeconds from startAt at the earliest).
 */
export type DrawSale = RoomSale & {
  admission: 'draw';
  entriesCloseAt: Date;
  winnersFactor: number;
};

/**
 * A draw's rights are not paced: as many as the stock lets in at once (the tick still hands them
 * out ADMIT_BATCH per call). Any bound above the most rights a sale can have would do.
 */
export const DRAW_ADMIT_PER_SECOND = 1_000_000_000;

export function isQueueSale(goods: GoodsEntity): goods is QueueSale {
  return (
    goods.admission === 'queue' &&
    goods.queueOpensAt !== null &&
    goods.admitPerSecond !== null &&
    goods.admissionTtlSeconds !== null
  );
}

export function isDrawSale(goods: GoodsEntity): goods is DrawSale {
  return (
    goods.admission === 'draw' &&
    goods.queueOpensAt !== null &&
    goods.entriesCloseAt !== null &&
    goods.winnersFactor !== null &&
    goods.admissionTtlSeconds !== null
  );
}

export function isRoomSale(goods: GoodsEntity): goods is QueueSale | DrawSale {
  return isQueueSale(goods) || isDrawSale(goods);
}

/** When a room's order is drawn: a queue sale's startAt, a draw sale's entriesCloseAt. */
export function drawAtOf(sale: QueueSale | DrawSale): number {
  return sale.admission === 'draw' ? sale.entriesCloseAt.getTime() : sale.startAt.getTime();
}

/**
 * How a room runs, the same engine for both kinds (lua/queue-join.lua, lua/queue-tick.lua):
 * when it takes joins, when its order is drawn, how fast and how far it admits.
 */
export interface RoomPlan {
  /** ms: joins (entries) from here. */
  opensAt: number;
  /** ms: the order is drawn from here; joins before it are the pre-queue the draw orders. */
  drawAt: number;
  /** ms: no join from here (a queue sale takes later joiners behind the drawn until the end). */
  joinsUntil: number;
  /** ms: an admission's time to buy is counted from here at the earliest (the sale's start). */
  buyFrom: number;
  endAt: number;
  admitPerSecond: number;
  admissionTtlMs: number;
  /** The admitted and undecided stay within the stock left times this. */
  stockFactor: number;
}

/** `queueStockFactor`: QUEUE_ADMIT_STOCK_FACTOR, a queue sale's (a draw's is its winnersFactor). */
export function roomPlanOf(sale: QueueSale | DrawSale, queueStockFactor: number): RoomPlan {
  const common = {
    opensAt: sale.queueOpensAt.getTime(),
    buyFrom: sale.startAt.getTime(),
    endAt: sale.endAt.getTime(),
    admissionTtlMs: sale.admissionTtlSeconds * 1_000,
  };
  if (sale.admission === 'draw') {
    return {
      ...common,
      drawAt: drawAtOf(sale),
      joinsUntil: drawAtOf(sale),
      admitPerSecond: DRAW_ADMIT_PER_SECOND,
      stockFactor: sale.winnersFactor,
    };
  }
  return {
    ...common,
    drawAt: drawAtOf(sale),
    joinsUntil: sale.endAt.getTime(),
    admitPerSecond: sale.admitPerSecond,
    stockFactor: queueStockFactor,
  };
}
