import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import type { RedisLocksService } from '../redis/redis-locks.service.js';

/** How often a job failing the same way says so again. */
const FAILURE_LOG_MS = 5_000;

/** Every `intervalMs`, or at each time a cron expression names (seconds field optional). */
export type JobSchedule = { intervalMs: number } | { cron: string };

/**
 * Registers `run` with @nestjs/schedule's registry (an interval or a cron job), such that across
 * all instances it runs on one at a time: each tick takes the job's lock in Redis (one key, set only when free, with a
 * time to live: lua/lock-take.lua) and skips the run when another instance holds it. A tick that is still running when the next one fires
 * is skipped too. It also runs once at start: a restarted instance should not wait a whole
 * period.
 */
export function scheduleSingletonJob(options: {
  registry: SchedulerRegistry;
  locks: RedisLocksService;
  name: string;
  schedule: JobSchedule;
  run: () => Promise<void>;
}): void {
  const logger = new Logger(options.name);
  const { registry, name, schedule } = options;
  let running = false;
  // A job that ticks every 100 ms while Redis is down would log ten lines a second: the same
  // failure is logged once per FAILURE_LOG_MS, with how many runs it failed since.
  let failure: { message: string; loggedAt: number; since: number } | undefined;
  // The lock outlives a run that hangs by one period at most; it is released as the run ends.
  let lockTtlMs = 'intervalMs' in schedule ? schedule.intervalMs * 2 : 0;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      const lock = await options.locks.tryLockJob(name, lockTtlMs);
      if (!lock) return;
      try {
        await options.run();
      } finally {
        await lock.release();
      }
    } catch (error) {
      const message = (error as Error).message;
      const now = Date.now();
      if (failure?.message === message && now - failure.loggedAt < FAILURE_LOG_MS) {
        failure.since += 1;
        return;
      }
      const again = failure?.message === message ? ` (${failure.since} more runs failed so)` : '';
      logger.error(`job ${name} failed: ${message}${again}`);
      failure = { message, loggedAt: now, since: 0 };
    } finally {
      running = false;
    }
  };
  if ('intervalMs' in schedule) {
    registry.addInterval(
      name,
      setInterval(() => void tick(), schedule.intervalMs),
    );
  } else {
    const job = CronJob.from({ cronTime: schedule.cron, onTick: () => void tick(), start: false });
    lockTtlMs = 2 * periodMs(job);
    registry.addCronJob(name, job);
    job.start();
  }
  setImmediate(() => void tick());
}

/** The time between the job's next two runs (a cron's period need not be even: the next one). */
function periodMs(job: CronJob): number {
  const [first, second] = job.nextDates(2);
  return Math.max(1_000, second.toMillis() - first.toMillis());
}
