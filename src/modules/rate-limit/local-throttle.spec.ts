import { describe, expect, it } from 'vitest';
import { LocalThrottle } from './local-throttle.js';

const budget = (throttler: string, limit: number, tracker = 'u:1') => ({
  throttler,
  tracker,
  ttl: 1_000,
  limit,
  blockDuration: 5_000,
});

describe('LocalThrottle', () => {
  it('lets a tracker through up to its limit within a window, then refuses it for the block', () => {
    const throttle = new LocalThrottle();
    const user = [budget('purchase-user', 2)];

    const answers = [0, 1, 2].map((ms) => throttle.hit(user, 10_000 + ms));

    expect(answers.map((a) => a.refused)).toEqual([-1, -1, 0]);
    expect(answers[2]).toMatchObject({ msToBlockEnd: 5_000, totalHits: 3 });
    // Still blocked after the window: the block, not the window, decides.
    expect(throttle.hit(user, 12_000)).toMatchObject({ refused: 0, msToBlockEnd: 3_002 });
    expect(throttle.hit(user, 15_002).refused).toBe(-1);
  });

  it('does not count the hits of a blocked tracker, and starts a new window after the last', () => {
    const throttle = new LocalThrottle();
    const user = [budget('read-user', 1)];
    throttle.hit(user, 0);
    throttle.hit(user, 1);
    for (let ms = 2; ms < 100; ms++) throttle.hit(user, ms);

    expect(throttle.hit(user, 4_000)).toMatchObject({ refused: 0, totalHits: 0 });
    expect(throttle.hit(user, 5_001)).toMatchObject({ refused: -1, totalHits: 1 });
  });

  it('ends the walk at the first refusal, leaving the later budgets unspent', () => {
    const throttle = new LocalThrottle();
    const perUser = (user: string) => [
      budget('purchase-user', 1, user),
      budget('purchase-ip', 2, 'ip:10.0.0.1'),
    ];

    throttle.hit(perUser('u:1'), 0);
    const refused = throttle.hit(perUser('u:1'), 1);
    const other = throttle.hit(perUser('u:2'), 2);
    const third = throttle.hit(perUser('u:3'), 3);

    expect(refused.refused).toBe(0);
    // u:1's refused hit did not spend the address's budget: u:2 is its second.
    expect(other.refused).toBe(-1);
    expect(third.refused).toBe(1);
  });

  it('forgets trackers whose window and block are over', () => {
    const throttle = new LocalThrottle();
    for (let i = 0; i < 100; i++) throttle.hit([budget('read-ip', 5, `ip:10.0.0.${i}`)], 0);
    expect(throttle.size).toBe(100);

    throttle.hit([budget('read-ip', 5, 'ip:10.0.1.1')], 2_000);

    expect(throttle.size).toBe(1);
  });
});
