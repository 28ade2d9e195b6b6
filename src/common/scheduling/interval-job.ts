import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { RedisLocks } from '../../infra/redis/redis-locks.js';

/**
 * Registers `run` as an interval job that, across all instances, runs on one at a time: each
 * tick takes a Redlock named after the job and skips the run when another instance holds it.
 * A tick that is still running when the next one fires is skipped too.
 */
export function scheduleSingletonJob(options: {
  registry: SchedulerRegistry;
  locks: RedisLocks;
  name: string;
  intervalMs: number;
  run: () => Promise<void>;
}): void {
  const logger = new Logger(options.name);
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      const lock = await options.locks.tryLockJob(options.name, options.intervalMs * 2);
      if (!lock) return;
      try {
        await options.run();
      } finally {
        await lock.release();
      }
    } catch (error) {
      logger.error(`job ${options.name} failed: ${(error as Error).message}`);
    } finally {
      running = false;
    }
  };
  const handle = setInterval(() => void tick(), options.intervalMs);
  options.registry.addInterval(options.name, handle);
  // Run once at start too: a restarted instance should not wait a whole interval.
  setImmediate(() => void tick());
}
