import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { slowLink } from './slow-link.js';

describe('a slow link', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('should hold the bytes and let them through once a turn, until it is restored', () => {
    const calls: string[] = [];
    const proxy = { stall: () => calls.push('stall'), resume: () => calls.push('resume') };
    const restore = slowLink(proxy, 100);
    expect(calls).toEqual(['stall']);
    vi.advanceTimersByTime(250);
    expect(calls).toEqual(['stall', 'resume', 'stall', 'resume', 'stall']);
    restore();
    vi.advanceTimersByTime(1_000);
    expect(calls).toEqual(['stall', 'resume', 'stall', 'resume', 'stall', 'resume']);
  });
});
