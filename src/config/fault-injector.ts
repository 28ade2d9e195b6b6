import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from './app-config.js';
import type { AppConfig, FaultPoint } from './env.validation.js';

/**
 * Steps a test may pause, to force an interleaving of two paths that change a sale's Redis state:
 * a path about to take the goods' sale-state lock (its premise not read under it yet); the
 * fallback's return once it read `redis_stale = 1`, before it wipes; a load that wrote the
 * buyers and restocked orders, before it writes the stock.
 */
export type PausePoint = 'before-sale-lock' | 'fallback-return-stale-read' | 'preheat-before-stock';

/** A pause a test holds at a step: the first call that reaches it waits until `release()`. */
export interface HeldPause {
  /** Whether a call is waiting here (or went through after waiting). */
  readonly reached: boolean;
  /** Lets the waiting call (and any later one) go on. */
  release(): void;
}

interface Hold extends HeldPause {
  reached: boolean;
  goodsId: number;
  path?: string;
  wait(): Promise<void>;
}

/**
 * Crash tests need the process to die at an exact point: only the Redis outbox knows a
 * purchase (after-deduct); an order is committed but its message not acked (after-commit); a
 * cancel is committed in MySQL but its stock not yet back in Redis (after-cancel-commit). Off unless FAULT_CRASH_POINT is set, which
 * the config refuses in production. Pauses (`holdAt`) are set by an in-process test only, and
 * refused in production too.
 */
@Injectable()
export class FaultInjector {
  private readonly logger = new Logger(FaultInjector.name);
  private reached = 0;
  private readonly holds = new Map<PausePoint, Hold>();

  constructor(@InjectConfig() private readonly config: AppConfig) {}

  crashPoint(point: FaultPoint): void {
    const fault = this.config.faultCrash;
    if (fault === null || fault.point !== point || ++this.reached < fault.after) return;
    this.logger.warn(`fault injection: SIGKILL at ${point}`);
    process.kill(process.pid, 'SIGKILL');
  }

  /**
   * Resolves at once unless a test holds this step for this goods (and this path, if the hold
   * names one) and no call waited here yet.
   */
  pause(point: PausePoint, goodsId: number, path?: string): Promise<void> {
    const hold = this.holds.get(point);
    if (hold === undefined || hold.goodsId !== goodsId || hold.reached) return Promise.resolve();
    if (hold.path !== undefined && hold.path !== path) return Promise.resolve();
    this.logger.warn(`fault injection: paused at ${point} for goods=${goodsId} ${path ?? ''}`);
    return hold.wait();
  }

  /** Holds the first call that reaches `point` for this goods (on `path`), until released. */
  holdAt(point: PausePoint, goodsId: number, path?: string): HeldPause {
    if (this.config.nodeEnv === 'production') {
      throw new Error('fault injection pauses are for tests and refused in production');
    }
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const hold: Hold = {
      goodsId,
      path,
      reached: false,
      wait: () => {
        hold.reached = true;
        return gate;
      },
      release: () => {
        if (this.holds.get(point) === hold) this.holds.delete(point);
        open();
      },
    };
    this.holds.set(point, hold);
    return hold;
  }
}
