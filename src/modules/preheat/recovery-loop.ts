import type { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter } from '../../common/database/transient-errors.js';

/**
 * One instance's follow-up of a Redis restart: runs `settle` with backoff until it reports the
 * sales back. A restart announced while it runs takes over (its run id is the one whose survivors
 * must be wiped); the loop itself goes on.
 */
export class RecoveryLoop {
  private runId: string | null = null;
  private since: number | null = null;
  private stopped = false;

  constructor(
    private readonly logger: Logger,
    private readonly settle: (runId: string) => Promise<boolean>,
    private readonly messages: { began: string; settled: string },
  ) {}

  /** Between a restart and its settling. */
  get active(): boolean {
    return this.since !== null;
  }

  begin(runId: string): void {
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
        if ((await this.settle(runId)) && runId === this.runId) {
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

  stop(): void {
    this.stopped = true;
  }
}
