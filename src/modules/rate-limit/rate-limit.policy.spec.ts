import { describe, expect, it } from 'vitest';
import { validateEnv } from '../../config/env.validation.js';
import { throttlerSpecs } from './rate-limit.policy.js';

describe('throttlerSpecs', () => {
  it('should limit purchases per user and per IP, tokens and reads too, with no global ceiling by default', () => {
    const specs = throttlerSpecs(validateEnv({}).rateLimit.throttle);

    expect(specs.map((spec) => [spec.name, spec.limit])).toEqual([
      ['purchase-user', 5],
      ['purchase-ip', 100],
      ['token-user', 5],
      ['token-ip', 100],
      ['read-user', 30],
      ['read-ip', 300],
    ]);
  });

  it("should let a user's double click through by default", () => {
    const purchaseUser = throttlerSpecs(validateEnv({}).rateLimit.throttle).find(
      (spec) => spec.name === 'purchase-user',
    );

    expect(purchaseUser!.limit).toBeGreaterThanOrEqual(2);
  });

  it('should add the global ceiling when it is configured', () => {
    const specs = throttlerSpecs(
      validateEnv({ THROTTLE_PURCHASE_GLOBAL_LIMIT: '5000' }).rateLimit.throttle,
    );

    expect(specs).toContainEqual({
      name: 'purchase-global',
      policy: 'purchase',
      dimension: 'global',
      limit: 5000,
    });
  });

  it('should drop a limit set to 0', () => {
    const specs = throttlerSpecs(
      validateEnv({ THROTTLE_PURCHASE_IP_LIMIT: '0' }).rateLimit.throttle,
    );

    expect(specs.map((spec) => spec.name)).not.toContain('purchase-ip');
  });

  it('should drop every limit when THROTTLE_ENABLED is false', () => {
    expect(throttlerSpecs(validateEnv({ THROTTLE_ENABLED: 'false' }).rateLimit.throttle)).toEqual(
      [],
    );
  });
});
