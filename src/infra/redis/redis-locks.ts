import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import Redlock from 'redlock';
import { randomHex } from '../../common/random/random-hex.js';
import { REDIS_CLIENT } from './redis.constants.js';
import { jobLockKey, saleKeys } from './seckill-keys.js';

/**
 * Redlock with its lock values (16 random bytes, as redlock makes them) from the pooled source:
 * redlock's own `randomBytes` per lock was a measurable share of the purchase route's CPU.
 */
class PooledRedlock extends Redlock {
  _random(): string {
    return randomHex(16);
  }
}

export interface HeldLock {
  release(): Promise<void>;
}

/**
 * Redlock locks, for the purchase path and for scheduled jobs alike. Taken without retry: a held
 * lock means someone else is already doing the work, so the caller answers at once
 * (DUPLICATE_REQUEST) or skips the job run.
 */
@Injectable()
export class RedisLocks {
  private readonly logger = new Logger(RedisLocks.name);
  private readonly redlock: Redlock;

  constructor(@Inject(REDIS_CLIENT) private readonly redis: Redis) {
    // redlock 4 passes EVAL its arguments as one array, which ioredis 5 flattens; only the
    // typings disagree.
    this.redlock = new PooledRedlock([redis as unknown as Redlock.CompatibleRedisClient], {
      retryCount: 0,
      driftFactor: 0.01,
    });
    // Redlock emits one event per failed attempt; a held lock is an expected outcome here.
    this.redlock.on('clientError', (error: Error) =>
      this.logger.warn(`lock client error: ${error.message}`),
    );
  }

  /** The per-(goods, user) purchase lock, or null when it is held by a concurrent click. */
  tryLockPurchase(goodsId: number, userId: number, ttlMs: number): Promise<HeldLock | null> {
    return this.tryLock(saleKeys(goodsId).userLock(userId), ttlMs);
  }

  /** A lock that lets one of many instances run a scheduled job. */
  tryLockJob(job: string, ttlMs: number): Promise<HeldLock | null> {
    return this.tryLock(jobLockKey(job), ttlMs);
  }

  private async tryLock(resource: string, ttlMs: number): Promise<HeldLock | null> {
    try {
      const lock = await this.redlock.lock(resource, ttlMs);
      return {
        release: async () => {
          // An expired lock is fine to drop: its holder's work is already done.
          await lock.unlock().catch(() => undefined);
        },
      };
    } catch (error) {
      if (!(error instanceof Redlock.LockError)) throw error;
      // Redlock says LockError both when the lock is held and when Redis failed; only the
      // first is a duplicate. This read throws (and the caller answers 503) when Redis is down.
      // (A holder may release between the two calls, so a missing key still means a duplicate.)
      await this.redis.exists(resource);
      return null;
    }
  }
}
