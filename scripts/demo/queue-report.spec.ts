import { describe, expect, it } from 'vitest';
import { fairDraw, peakAdmissionsPerSecond } from './queue-report.js';

describe('the queue report', () => {
  it("should give a fair draw's mean and deviation of the scripts' units (hypergeometric)", () => {
    // 500 units among 5,000 people and 200 scripts: the fairness test's crowd.
    const draw = fairDraw(500, 200, 5_000);
    expect(draw.mean).toBeCloseTo(19.23, 2);
    expect(draw.sd).toBeCloseTo(4.09, 2);
    // Every buyer gets a unit: no spread left.
    expect(fairDraw(10, 4, 6)).toEqual({ mean: 4, sd: 0 });
    expect(fairDraw(0, 4, 6)).toEqual({ mean: 0, sd: 0 });
  });

  it('should find the most admissions in any 1,000 ms, a window closed at its end and open at its start', () => {
    const admissions = [
      { at: 0, count: 20 },
      { at: 500, count: 20 },
      { at: 999, count: 10 },
      // 0 has left the window (at - 1,000 and before).
      { at: 1_000, count: 15 },
      { at: 3_000, count: 40 },
    ];
    expect(peakAdmissionsPerSecond(admissions)).toBe(50);
    expect(peakAdmissionsPerSecond([...admissions].reverse())).toBe(50);
    expect(peakAdmissionsPerSecond([])).toBe(0);
  });
});
