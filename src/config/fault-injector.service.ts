import { Injectable, Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { appConfig } from './app.config.js';
import type { AppSection } from './app-section.js';
import { InjectConfig } from './config-namespace.js';
import {
  faultsConfig,
  type FaultDelay,
  type FaultPoint,
  type FaultsConfig,
  type PausePoint,
} from './faults.config.js';

export type { PausePoint };

/**
 * Points a test may hold a step at (holdAt), to force an interleaving:
 * - `before-order-write`: a consumer has claimed its purchases and not yet written them;
 * - `before-sale-lock`: a path that wipes or loads a sale is about to take the goods' sale-state
 *   lock (its premise not read under it yet);
 * - `fallback-return-stale-read`: the fallback's return read `redis_stale = 1`, before it wipes;
 * - `preheat-before-stock`: a load read its history (MySQL's buyers and cancelled orders, its
 *   transaction still open) and has written nothing yet; each bucket is then one MULTI.
 *
 * FAULT_DELAYS slows the same points by chance (the random-fault checker's slow steps); with
 * FAULT_DELAYS_SWITCH_FILE only while that file says `on`. The file holds the state and SIGUSR2
 * only says "read it again": two signals sent close together arrive as one, and a process
 * restarted meanwhile reads the state at boot, so neither leaves the steps the wrong way round.
 */

/** Where a step is reached: the goods, and the path (SaleStatePath) where there are several. */
export interface PauseAt {
  goodsId: number;
  path?: string;
}

interface Hold {
  arrived: () => void;
  gate: Promise<void>;
  /** Only the first call for this goods (on this path) is held; the others go on. */
  only?: PauseAt;
  taken: boolean;
}

/**
 * Crash tests need the process to die at an exact point: only the Redis outbox knows a
 * purchase (after-deduct); an order is committed but its message not acked (after-commit); a
 * cancel is committed in MySQL but its stock not yet back in Redis (after-cancel-commit). Off unless FAULT_CRASH_POINT is set, which
 * the config refuses in production. Pause points do nothing unless a test in the same process
 * holds them (refused in production too).
 */
@Injectable()
export class FaultInjectorService {
  private readonly logger = new Logger(FaultInjectorService.name);
  private reached = 0;
  private readonly holds = new Map<PausePoint, Hold>();

  /** Whether FAULT_DELAYS slow steps are drawn now (FAULT_DELAYS_SWITCH_FILE switches them). */
  private slowing = true;

  constructor(
    @InjectConfig(faultsConfig) private readonly faults: FaultsConfig,
    @InjectConfig(appConfig) private readonly app: AppSection,
  ) {
    const switchFile = faults.delaysSwitchFile;
    if (switchFile === null) return;
    const read = () => {
      this.slowing = readSwitch(switchFile);
      this.logger.warn(`fault injection: slow steps ${this.slowing ? 'on' : 'off'}`);
    };
    read();
    process.on('SIGUSR2', read);
  }

  crashPoint(point: FaultPoint): void {
    const fault = this.faults.crash;
    if (fault === null || fault.point !== point || ++this.reached < fault.after) return;
    this.logger.warn(`fault injection: SIGKILL at ${point}`);
    process.kill(process.pid, 'SIGKILL');
  }

  /**
   * Waits while a test holds `point` (for this goods and path, if the hold names one), or for a
   * FAULT_DELAYS slow step drawn at it.
   */
  async pausePoint(point: PausePoint, at?: PauseAt): Promise<void> {
    const delay = this.faults.delays.find((candidate) => candidate.point === point);
    if (delay && this.slowing) await this.slowStep(delay, at);
    const hold = this.holds.get(point);
    if (!hold) return;
    if (hold.only) {
      const { goodsId, path } = hold.only;
      if (hold.taken || at?.goodsId !== goodsId || (path !== undefined && path !== at.path)) return;
      hold.taken = true;
    }
    this.logger.warn(
      `fault injection: held at ${point}${at ? ` goods=${at.goodsId} ${at.path ?? ''}` : ''}`,
    );
    hold.arrived();
    await hold.gate;
  }

  private async slowStep(delay: FaultDelay, at?: PauseAt): Promise<void> {
    if (Math.random() * 100 >= delay.percent) return;
    this.logger.warn(
      `fault injection: slowed ${delay.ms} ms at ${delay.point}${at ? ` goods=${at.goodsId} ${at.path ?? ''}` : ''}`,
    );
    await new Promise((resolve) => setTimeout(resolve, delay.ms));
  }

  /**
   * Holds the next steps that reach `point` until `release` is called (with `only`, the first
   * one for that goods and path alone); `reached` resolves when the first one arrives.
   */
  holdAt(point: PausePoint, only?: PauseAt): { reached: Promise<void>; release: () => void } {
    if (this.app.nodeEnv === 'production') {
      throw new Error('fault injection pauses are for tests and refused in production');
    }
    let arrived!: () => void;
    let open!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const gate = new Promise<void>((resolve) => (open = resolve));
    const hold: Hold = { arrived, gate, only, taken: false };
    this.holds.set(point, hold);
    return {
      reached,
      release: () => {
        if (this.holds.get(point) === hold) this.holds.delete(point);
        open();
      },
    };
  }
}

/** A missing or unreadable switch file is off. */
function readSwitch(path: string): boolean {
  try {
    return readFileSync(path, 'utf8').trim() === 'on';
  } catch {
    return false;
  }
}
