import { describe, expect, it } from 'vitest';
import { asQueueAnswer } from './workload.js';

describe("a draw entry's answer in the waiting room's terms", () => {
  it('should read a right as an admission, the waitlist as a place, and NOT_SELECTED as a final SOLD_OUT', () => {
    expect(
      asQueueAnswer({ state: 'SELECTED', rank: null, ahead: null, rightUntil: 'T', final: false }),
    ).toMatchObject({ state: 'ADMITTED', entryState: 'SELECTED', admittedUntil: 'T' });
    expect(asQueueAnswer({ state: 'WAITLISTED', rank: 40, ahead: 7, final: false })).toMatchObject({
      state: 'WAITING',
      position: 8,
      final: false,
    });
    expect(
      asQueueAnswer({ state: 'ENTERED', rank: null, ahead: null, final: false }),
    ).toMatchObject({ state: 'WAITING', position: null });
    expect(asQueueAnswer({ state: 'NOT_SELECTED', rank: null, final: true })).toMatchObject({
      state: 'SOLD_OUT',
      final: true,
    });
    expect(asQueueAnswer({ state: 'NOT_ENTERED', final: false }).state).toBe('NOT_JOINED');
    for (const state of ['PURCHASED', 'EXPIRED']) {
      expect(asQueueAnswer({ state, final: true }).state).toBe(state);
    }
  });
});
