import { describe, expect, it } from 'vitest';
import type { QueueStanding } from './queue.scripts.js';
import type { QueueSale } from './room-sale.js';
import { isFinal, queueStatusOf } from './waiting-room.service.js';

const NOW = Date.parse('2026-12-03T12:00:00Z');
const sale = {
  id: 1,
  startAt: new Date(NOW - 60_000),
  endAt: new Date(NOW + 60_000),
  admitPerSecond: 10,
} as QueueSale;
const outlook = { stockFactor: 1, unitsMayReturn: false };

const standing = (change: Partial<QueueStanding>): QueueStanding => ({
  state: 'WAITING',
  ahead: 25,
  admittedUntil: null,
  admittedLast10s: 0,
  head: 0,
  ended: false,
  stopped: false,
  pending: false,
  stock: 100,
  deciding: 0,
  ...change,
});

describe('a queue standing as the buyer reads it', () => {
  it('should give the ETA at admitPerSecond, not at the pace of the last ten seconds', () => {
    const status = queueStatusOf(sale, standing({ admittedLast10s: 1 }), NOW, outlook);
    expect(status).toEqual({
      state: 'WAITING',
      position: 26,
      ahead: 25,
      etaSeconds: 3,
      final: false,
    });
  });

  it('should have no ETA while the clock is stopped, before the shuffle, after the end or beyond what the stock lets in', () => {
    const eta = (change: Partial<QueueStanding>, at = NOW) =>
      queueStatusOf(sale, standing(change), at, outlook).etaSeconds;
    expect(eta({ stopped: true })).toBeNull();
    expect(eta({ ahead: null })).toBeNull();
    expect(eta({ stock: null })).toBeNull();
    // 100 units, 80 deciding: the 20 ahead fill the stock, and this buyer waits on a lapse.
    expect(eta({ ahead: 20, deciding: 80 })).toBeNull();
    expect(eta({ ahead: 19, deciding: 80 })).toBe(2);
    // 25 ahead at 10 a second, 2 s before the end: an admission after endAt is no promise.
    expect(eta({}, NOW + 58_000)).toBeNull();
    expect(eta({}, NOW + 56_000)).toBe(3);
  });

  it('should be final once nothing can change it, and every state at the end', () => {
    expect(isFinal(standing({ state: 'PURCHASED', pending: true }), false)).toBe(false);
    expect(isFinal(standing({ state: 'PURCHASED' }), false)).toBe(true);
    expect(isFinal(standing({ state: 'PURCHASED', pending: true, ended: true }), false)).toBe(true);
    expect(isFinal(standing({ state: 'EXPIRED' }), true)).toBe(true);
    expect(isFinal(standing({ state: 'SOLD_OUT' }), true)).toBe(false);
    expect(isFinal(standing({ state: 'SOLD_OUT' }), false)).toBe(true);
    expect(isFinal(standing({ state: 'SOLD_OUT', ended: true }), true)).toBe(true);
    for (const state of ['NOT_JOINED', 'WAITING', 'ADMITTED'] as const) {
      expect(isFinal(standing({ state }), false)).toBe(false);
      expect(isFinal(standing({ state, ended: true }), false)).toBe(true);
    }
  });

  it('should keep a sold-out buyer out of the numbers: no position, no ETA', () => {
    const status = queueStatusOf(sale, standing({ state: 'SOLD_OUT' }), NOW, {
      stockFactor: 1,
      unitsMayReturn: true,
    });
    expect(status).toEqual({
      state: 'SOLD_OUT',
      position: null,
      ahead: null,
      etaSeconds: null,
      final: false,
    });
  });
});
