import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { validateEnv } from './env.validation.js';
import { FaultInjectorService } from './fault-injector.service.js';

function faultInjector(env: Record<string, string>): FaultInjectorService {
  const config = validateEnv(env);
  return new FaultInjectorService(config.faults, config.app);
}

/** Whether the promise has settled after the timers advanced by `ms`. */
async function settledAfter(promise: Promise<void>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await vi.advanceTimersByTimeAsync(ms);
  return settled;
}

describe('FaultInjectorService slow steps (FAULT_DELAYS)', () => {
  afterEach(() => {
    vi.useRealTimers();
    process.removeAllListeners('SIGUSR2');
  });

  it('should hold a step at a configured point for its delay, and not at other points', async () => {
    vi.useFakeTimers();
    const faults = faultInjector({ FAULT_DELAYS: 'before-order-write:500:100' });

    const slowed = faults.pausePoint('before-order-write');
    expect(await settledAfter(slowed, 499)).toBe(false);
    expect(await settledAfter(slowed, 1)).toBe(true);
    expect(await settledAfter(faults.pausePoint('before-sale-lock', { goodsId: 1 }), 0)).toBe(true);
  });

  it('should slow steps only while the switch file says on, read again at each SIGUSR2', async () => {
    vi.useFakeTimers();
    const switchFile = join(mkdtempSync(join(tmpdir(), 'fault-switch-')), 'slow');
    const faults = faultInjector({
      FAULT_DELAYS: 'preheat-before-stock:500:100',
      FAULT_DELAYS_SWITCH_FILE: switchFile,
    });
    const at = { goodsId: 7 };
    const slows = async () =>
      !(await settledAfter(faults.pausePoint('preheat-before-stock', at), 0));

    expect(await slows()).toBe(false);
    writeFileSync(switchFile, 'on\n');
    expect(await slows()).toBe(false);
    process.emit('SIGUSR2');
    expect(await slows()).toBe(true);
    // Signals that arrive as one, or one too many, leave the state the file says.
    process.emit('SIGUSR2');
    expect(await slows()).toBe(true);
    writeFileSync(switchFile, 'off\n');
    process.emit('SIGUSR2');
    expect(await slows()).toBe(false);
  });

  it('should start a process with the slow steps the switch file says, without a signal', async () => {
    vi.useFakeTimers();
    const switchFile = join(mkdtempSync(join(tmpdir(), 'fault-switch-')), 'slow');
    writeFileSync(switchFile, 'on\n');
    const faults = faultInjector({
      FAULT_DELAYS: 'before-order-write:500:100',
      FAULT_DELAYS_SWITCH_FILE: switchFile,
    });

    expect(await settledAfter(faults.pausePoint('before-order-write'), 0)).toBe(false);
  });
});
