import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import type { RedisWatchdog } from '../../infra/redis/redis-watchdog.js';
import type { SurvivorWipe } from './survivor-wipe.service.js';

/**
 * One instance's follow-up of a Redis restart: once what survived is wiped, `remaining` is asked,
 * with backoff, until no sale is left to bring back. A restart announced while it runs takes
 * over (its run id is the one whose survivors must be wiped); the loop itself goes on.
 */
export class RecoveryLoop {
  private readonly logger: Logger;
  private runId: string | null = null;
  private since: number | null = null;
  private stopped = false;

  constructor(
    context: string,
    private readonly wipe: SurvivorWipe,
    /** How many of the sales a restart concerns are not back yet (bringing them back, or not). */
    private readonly remaining: () => Promise<number>,
    private readonly messages: { began: string; settled: string },
  ) {
    this.logger = new Logger(context);
  }

  /** Starts a loop at each restart the watchdog announces. */
  follow(watchdog: RedisWatchdog): void {
    watchdog.onRestart((_previous, current) => this.begin(current));
  }

  /** Between a restart and its settling. */
  get active(): boolean {
    return this.since !== null;
  }

  private begin(runId: string): void {
    this.runId = runId;
    if (this.since !== null) return;
    this.since = Date.now();
    this.logger.error(`${this.messages.began}: run_id=${runId}`);
    void this.run();
  }

  private async run(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      const runId = this.runId!;
      try {
        if ((await this.settled(runId)) && runId === this.runId) {
          this.logger.warn(
            `${this.messages.settled} after ${Date.now() - this.since!} ms: run_id=${runId}`,
          );
          this.since = null;
          return;
        }
      } catch (error) {
        this.logger.warn(`sale recovery not done yet: ${(error as Error).message}`);
      }
      await sleep(backoffWithJitter(attempt, 200, 2_000));
    }
  }

  private async settled(runId: string): Promise<boolean> {
    return (await this.wipe.done(runId)) && (await this.remaining()) === 0;
  }

  stop(): void {
    this.stopped = true;
  }
}
