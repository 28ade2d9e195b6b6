import { Inject, Injectable, Logger } from '@nestjs/common';
import type { RedisClient } from './redis-client.js';
import Redlock from 'redlock';
import { randomHex } from '../../common/random/random-hex.js';
import { LuaScriptsService } from './lua-scripts.service.js';
import { REDIS_CLIENT } from './redis.constants.js';
import { jobLockKey, type SaleKeys } from './seckill-keys.js';

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

/** A buyer's purchase lock. */
export interface PurchaseLock {
  /**
   * Drops the lock and, given the request whose order message the broker confirmed, takes it out
   * of the sale's outbox in the same round trip (lua/purchase-unlock.lua). A lost release
   * expires with the lock's TTL; a lost outbox removal only makes the sweeper republish a
   * message the consumer then drops as a duplicate.
   */
  release(confirmedRequestId?: string): Promise<void>;
}

/** See lua/purchase-unlock.lua; `confirmedRequestId` leaves the outbox with the lock. */
export async function purchaseUnlock(
  lua: LuaScriptsService,
  keys: Pick<SaleKeys, 'outbox'> & { lock: string },
  lockValue: string,
  confirmedRequestId: string | undefined,
): Promise<{ unlocked: boolean; removedFromOutbox: boolean }> {
  const [unlocked, removed] = (await lua.run(
    'purchaseUnlock',
    keys.lock,
    keys.outbox,
    lockValue,
    confirmedRequestId ?? '',
  )) as [number, number];
  return { unlocked: unlocked === 1, removedFromOutbox: removed === 1 };
}

/**
 * The purchase path's per-buyer locks (Redlock) and the jobs' locks (lua/lock-take.lua: stamped
 * with the Redis server that set them). Taken without retry: a held lock means someone else is
 * already doing the work, so the caller answers at once (DUPLICATE_REQUEST) or skips the job run.
 */
@Injectable()
export class RedisLocksService {
  private readonly logger = new Logger(RedisLocksService.name);
  private readonly redlock: Redlock;

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly lua: LuaScriptsService,
  ) {
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

  /**
   * The per-(goods, user) purchase lock, or null when it is held by a concurrent click. `keys`:
   * the buyer's home bucket's (its outbox is settled with the lock).
   */
  async tryLockPurchase(
    keys: SaleKeys,
    userId: number,
    ttlMs: number,
  ): Promise<PurchaseLock | null> {
    const lockKey = keys.userLock(userId);
    const lock = await this.acquire(lockKey, ttlMs);
    if (!lock) return null;
    return {
      release: async (confirmedRequestId) => {
        await purchaseUnlock(
          this.lua,
          { lock: lockKey, outbox: keys.outbox },
          lock.value!,
          confirmedRequestId,
        ).catch(() => undefined);
      },
    };
  }

  /**
   * A lock that lets one of many instances run a job (a scheduled one, or a path that wipes or
   * loads a sale), or null when it is held. Its value names the Redis server that set it
   * (lua/lock-take.lua), so that one this server did not set can be dropped (dropStaleJobLock).
   */
  async tryLockJob(job: string, ttlMs: number): Promise<HeldLock | null> {
    const key = jobLockKey(job);
    const value = (await this.lua.run('lockTake', key, randomHex(16), ttlMs)) as string | null;
    if (value === null) return null;
    return {
      release: async () => {
        // An expired lock is fine to drop: its holder's work is already done.
        await this.lua.run('lockRelease', key, value).catch(() => undefined);
      },
    };
  }

  /**
   * Drops the job's lock when this Redis server did not set it (a snapshot's, loaded at a
   * restart, or a replica's before a failover: its holder worked on the data that was lost); true
   * when it did (lua/lock-drop-stale.lua).
   */
  async dropStaleJobLock(job: string): Promise<boolean> {
    return (await this.lua.run('lockDropStale', jobLockKey(job))) === 1;
  }

  private async acquire(resource: string, ttlMs: number): Promise<Redlock.Lock | null> {
    try {
      return await this.redlock.lock(resource, ttlMs);
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
