import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from './app-config.js';
import type { AppConfig, FaultPoint } from './env.validation.js';

/**
 * Points a test may hold a step at (holdAt), to force an interleaving of two consumers:
 * `before-order-write`, a consumer has claimed its purchases and not yet written them.
 */
export type PausePoint = 'before-order-write';

/**
 * Crash tests need the process to die at an exact point: only the Redis outbox knows a
 * purchase (after-deduct); an order is committed but its message not acked (after-commit); a
 * cancel is committed in MySQL but its stock not yet back in Redis (after-cancel-commit). Off unless FAULT_CRASH_POINT is set, which
 * the config refuses in production. Pause points do nothing unless a test in the same process
 * holds them.
 */
@Injectable()
export class FaultInjector {
  private readonly logger = new Logger(FaultInjector.name);
  private reached = 0;
  private readonly holds = new Map<PausePoint, { arrived: () => void; gate: Promise<void> }>();

  constructor(@InjectConfig() private readonly config: AppConfig) {}

  crashPoint(point: FaultPoint): void {
    const fault = this.config.faultCrash;
    if (fault === null || fault.point !== point || ++this.reached < fault.after) return;
    this.logger.warn(`fault injection: SIGKILL at ${point}`);
    process.kill(process.pid, 'SIGKILL');
  }

  /** Waits while a test holds `point`; at once otherwise. */
  async pausePoint(point: PausePoint): Promise<void> {
    const hold = this.holds.get(point);
    if (!hold) return;
    this.logger.warn(`fault injection: held at ${point}`);
    hold.arrived();
    await hold.gate;
  }

  /**
   * Holds the next steps that reach `point` until `release` is called; `reached` resolves when
   * the first one arrives.
   */
  holdAt(point: PausePoint): { reached: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let open!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const gate = new Promise<void>((resolve) => (open = resolve));
    this.holds.set(point, { arrived, gate });
    return {
      reached,
      release: () => {
        this.holds.delete(point);
        open();
      },
    };
  }
}
