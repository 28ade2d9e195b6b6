import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { scopeWithout } from '../../infra/redis/redis-client.js';
import {
  saleInScope,
  type RedisRestart,
  type RedisWatchdogService,
} from '../../infra/redis/redis-watchdog.service.js';
import type { SurvivorWipeService } from './survivor-wipe.service.js';

/**
 * One instance's follow-up of Redis restarts: for each restart (on a cluster, of each master),
 * once what survived in its slots is wiped, `remaining` is asked, with backoff, until no sale of
 * those slots is left to bring back. A restart of a server whose own restart is still pending
 * takes over the slots it serves (its run id is the one whose survivors must be wiped).
 */
export class RecoveryLoop {
  private readonly logger: Logger;
  /** Restarts not settled yet, by the run id they brought. */
  private readonly pending = new Map<string, RedisRestart>();
  private since: number | null = null;
  private stopped = false;

  constructor(
    context: string,
    private readonly wipe: SurvivorWipeService,
    /** How many sales of the restart's slots are not back yet (bringing them back, or not). */
    private readonly remaining: (restart: RedisRestart) => Promise<number>,
    private readonly messages: { began: string; settled: string },
    /** Longest pause between two attempts: reopening waits for the next one. */
    private readonly maxBackoffMs = 500,
  ) {
    this.logger = new Logger(context);
  }

  /** Starts following each restart the watchdog announces. */
  follow(watchdog: RedisWatchdogService): void {
    watchdog.onRestart((restart) => this.begin(restart));
  }

  /** Between a restart and its settling. */
  get active(): boolean {
    return this.pending.size > 0;
  }

  /** Whether a restart not settled yet concerns this sale. */
  covers(goodsId: number, shards = 1): boolean {
    for (const restart of this.pending.values()) {
      if (saleInScope(restart.slots, goodsId, shards)) return true;
    }
    return false;
  }

  private begin(restart: RedisRestart): void {
    for (const [runId, earlier] of this.pending) {
      if (earlier.current !== restart.previous) continue;
      const left = scopeWithout(earlier.slots, restart.slots);
      if (left === null) this.pending.delete(runId);
      else this.pending.set(runId, { ...earlier, slots: left });
    }
    this.pending.set(restart.current, restart);
    this.logger.error(`${this.messages.began}: run_id=${restart.current}`);
    if (this.since !== null) return;
    this.since = Date.now();
    void this.run();
  }

  private async run(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        for (const restart of [...this.pending.values()]) {
          if (!(await this.settled(restart))) continue;
          // Unless a later restart took some of its slots over meanwhile.
          if (this.pending.get(restart.current) === restart) this.pending.delete(restart.current);
        }
        if (this.pending.size === 0) {
          this.logger.warn(`${this.messages.settled} after ${Date.now() - this.since!} ms`);
          this.since = null;
          return;
        }
      } catch (error) {
        this.logger.warn(`sale recovery not done yet: ${(error as Error).message}`);
      }
      await sleep(backoffWithJitter(attempt, 100, this.maxBackoffMs));
    }
  }

  private async settled(restart: RedisRestart): Promise<boolean> {
    return (await this.wipe.done(restart)) && (await this.remaining(restart)) === 0;
  }

  stop(): void {
    this.stopped = true;
  }
}
