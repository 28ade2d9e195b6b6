import { afterEach, describe, expect, it, vi } from 'vitest';
import { validateEnv } from './env.validation.js';
import { FaultInjector } from './fault-injector.js';

/** Whether the promise has settled after the timers advanced by `ms`. */
async function settledAfter(promise: Promise<void>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await vi.advanceTimersByTimeAsync(ms);
  return settled;
}

describe('FaultInjector slow steps (FAULT_DELAYS)', () => {
  afterEach(() => {
    vi.useRealTimers();
    process.removeAllListeners('SIGUSR2');
  });

  it('should hold a step at a configured point for its delay, and not at other points', async () => {
    vi.useFakeTimers();
    const faults = new FaultInjector(validateEnv({ FAULT_DELAYS: 'before-order-write:500:100' }));

    const slowed = faults.pausePoint('before-order-write');
    expect(await settledAfter(slowed, 499)).toBe(false);
    expect(await settledAfter(slowed, 1)).toBe(true);
    expect(await settledAfter(faults.pausePoint('before-sale-lock', { goodsId: 1 }), 0)).toBe(true);
  });

  it('should slow nothing until SIGUSR2 switches the steps on, and stop at the next', async () => {
    vi.useFakeTimers();
    const faults = new FaultInjector(
      validateEnv({ FAULT_DELAYS: 'preheat-before-stock:500:100', FAULT_DELAYS_BY_SIGNAL: 'true' }),
    );
    const at = { goodsId: 7 };

    expect(await settledAfter(faults.pausePoint('preheat-before-stock', at), 0)).toBe(true);
    process.emit('SIGUSR2');
    expect(await settledAfter(faults.pausePoint('preheat-before-stock', at), 0)).toBe(false);
    process.emit('SIGUSR2');
    expect(await settledAfter(faults.pausePoint('preheat-before-stock', at), 0)).toBe(true);
  });
});
