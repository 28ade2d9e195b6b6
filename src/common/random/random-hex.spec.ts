import { describe, expect, it } from 'vitest';
import { randomHex } from './random-hex.js';

describe('randomHex', () => {
  it('should give the asked number of bytes as lower-case hex', () => {
    expect(randomHex(8)).toMatch(/^[0-9a-f]{16}$/);
    expect(randomHex(16)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('should never hand out the same bytes twice, across pool refills', () => {
    const seen = new Set(Array.from({ length: 5_000 }, () => randomHex(16)));
    expect(seen.size).toBe(5_000);
  });

  it('should serve a request larger than the pool', () => {
    expect(randomHex(5_000)).toMatch(/^[0-9a-f]{10000}$/);
  });
});
