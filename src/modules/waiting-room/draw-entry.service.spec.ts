import { describe, expect, it } from 'vitest';
import type { QueueStanding } from './queue.scripts.js';
import { entryStatusOf } from './draw-entry.service.js';
import { roomPlanOf, type DrawSale, type QueueSale } from './room-sale.js';

const NOW = Date.parse('2026-12-07T12:00:00Z');

const standing = (change: Partial<QueueStanding>): QueueStanding => ({
  state: 'WAITING',
  ahead: null,
  admittedUntil: null,
  admittedLast10s: 0,
  head: 0,
  ended: false,
  stopped: false,
  pending: false,
  stock: 10,
  deciding: 10,
  ...change,
});

describe('an entry in a draw sale as the entrant reads it', () => {
  it('should be ENTERED before the draw and WAITLISTED with its rank in the draw after it', () => {
    expect(entryStatusOf(standing({}), false)).toEqual({
      state: 'ENTERED',
      rank: null,
      ahead: null,
      final: false,
    });
    // 12 rights given so far (head), 3 entries ahead still waiting: the 16th entry drawn.
    expect(entryStatusOf(standing({ ahead: 3, head: 12 }), false)).toEqual({
      state: 'WAITLISTED',
      rank: 16,
      ahead: 3,
      final: false,
    });
  });

  it('should be SELECTED with the end of its right, and PURCHASED or EXPIRED once used or lapsed', () => {
    expect(
      entryStatusOf(standing({ state: 'ADMITTED', admittedUntil: NOW, ahead: null }), false),
    ).toEqual({
      state: 'SELECTED',
      rank: null,
      ahead: null,
      rightUntil: new Date(NOW).toISOString(),
      final: false,
    });
    expect(entryStatusOf(standing({ state: 'PURCHASED' }), false)).toMatchObject({
      state: 'PURCHASED',
      final: true,
    });
    expect(entryStatusOf(standing({ state: 'EXPIRED' }), false)).toMatchObject({
      state: 'EXPIRED',
      final: true,
    });
  });

  it('should be NOT_SELECTED only once no right can reach it: sold out with no unit to come back, or the end', () => {
    // Sold out while an unpaid order may still come back: still on the waitlist, at its rank.
    expect(entryStatusOf(standing({ state: 'SOLD_OUT', ahead: 4, head: 10 }), true)).toEqual({
      state: 'WAITLISTED',
      rank: 15,
      ahead: 4,
      final: false,
    });
    expect(entryStatusOf(standing({ state: 'SOLD_OUT', ahead: 4, head: 10 }), false)).toEqual({
      state: 'NOT_SELECTED',
      rank: null,
      ahead: null,
      final: true,
    });
    expect(
      entryStatusOf(standing({ state: 'SOLD_OUT', ahead: 4, ended: true }), true),
    ).toMatchObject({ state: 'NOT_SELECTED', final: true });
    expect(entryStatusOf(standing({ state: 'NOT_JOINED', ended: true }), false)).toMatchObject({
      state: 'NOT_ENTERED',
      final: true,
    });
  });
});

describe("a room's plan", () => {
  const startAt = new Date(NOW + 3_600_000);
  const endAt = new Date(NOW + 7_200_000);

  it('should draw a draw sale at entriesCloseAt, take entries only until then, give its rights unpaced by winnersFactor, counted from the start', () => {
    const sale = {
      admission: 'draw',
      queueOpensAt: new Date(NOW),
      entriesCloseAt: new Date(NOW + 1_800_000),
      startAt,
      endAt,
      admissionTtlSeconds: 600,
      winnersFactor: 3,
    } as DrawSale;
    const plan = roomPlanOf(sale, 2);
    expect(plan).toMatchObject({
      opensAt: NOW,
      drawAt: NOW + 1_800_000,
      joinsUntil: NOW + 1_800_000,
      buyFrom: startAt.getTime(),
      admissionTtlMs: 600_000,
      stockFactor: 3,
    });
    expect(plan.admitPerSecond).toBeGreaterThan(10_000_000);
  });

  it('should draw a queue sale at startAt, take joins until the end, at its pace and QUEUE_ADMIT_STOCK_FACTOR', () => {
    const sale = {
      admission: 'queue',
      queueOpensAt: new Date(NOW),
      startAt,
      endAt,
      admitPerSecond: 50,
      admissionTtlSeconds: 60,
    } as QueueSale;
    expect(roomPlanOf(sale, 2)).toEqual({
      opensAt: NOW,
      drawAt: startAt.getTime(),
      joinsUntil: endAt.getTime(),
      buyFrom: startAt.getTime(),
      endAt: endAt.getTime(),
      admitPerSecond: 50,
      admissionTtlMs: 60_000,
      stockFactor: 2,
    });
  });
});
