import { describe, expect, it } from 'vitest';

import { purchaseOutcome } from './history.js';

describe('what a purchase answer says was taken', () => {
  it('should read a 202 as taken and every refusal of the contract as nothing taken', () => {
    expect(purchaseOutcome(202, undefined, { status: 'QUEUED', requestId: 'r' })).toBe('taken');
    for (const status of [400, 403, 409, 429]) {
      expect(purchaseOutcome(status, 'X', { code: 'X' })).toBe('refused');
    }
    expect(purchaseOutcome(503, 'UNAVAILABLE', { code: 'UNAVAILABLE' })).toBe('refused');
    // Nothing reached the server.
    expect(purchaseOutcome(0, 'ECONNREFUSED', undefined)).toBe('refused');
  });

  it('should read a 503 with a request id, a timeout, a reset and a 500 as unknown', () => {
    expect(purchaseOutcome(503, 'UNAVAILABLE', { code: 'UNAVAILABLE', requestId: 'r' })).toBe(
      'unknown',
    );
    expect(purchaseOutcome(0, 'TIMEOUT', undefined)).toBe('unknown');
    expect(purchaseOutcome(0, 'ECONNRESET', undefined)).toBe('unknown');
    expect(purchaseOutcome(500, 'INTERNAL_ERROR', {})).toBe('unknown');
  });
});
