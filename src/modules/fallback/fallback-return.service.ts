import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DomainError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { RedisLocks } from '../../infra/redis/redis-locks.js';
import { PreheatService } from '../preheat/preheat.service.js';
import { StockService } from '../stock/stock.service.js';
import { DatabaseBarrier } from './database-barrier.service.js';

const EVERY_MS = 500;
const LOCK_TTL_MS = 30_000;
/** Rows of old barriers and beats are dropped this often. */
const PRUNE_EVERY_MS = 600_000;

/**
 * Brings back to Redis each sale MySQL marks `redis_stale` (sold by the fallback, or written by a
 * consumer without Redis), once Redis answers: what Redis holds of it is wiped, then it is
 * rebuilt from MySQL as after a restart (PreheatService: after the order barrier, in the
 * transaction that closes the fallback and clears the mark). The wipe comes first so that no
 * instance sells the old copy meanwhile (they hold the Redis path until the sale is loaded; see
 * FallbackGate). Cluster-wide work, run where the consumers run (the rebuild waits for their
 * drain), one instance per sale at a time.
 */
@Injectable()
export class FallbackReturn implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(FallbackReturn.name);
  private timer?: NodeJS.Timeout;
  private running = false;
  private prunedAt = 0;
  /** When each stale sale was first wiped here (the rebuild waits for what Redis took before). */
  private readonly wipedAt = new Map<number, number>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly stock: StockService,
    private readonly preheat: PreheatService,
    private readonly locks: RedisLocks,
    private readonly barriers: DatabaseBarrier,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    if (this.config.redisDownMode !== 'database') return;
    this.timer = setInterval(() => void this.run(), EVERY_MS);
    this.timer.unref();
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) {
        await this.barriers.prune();
        this.prunedAt = Date.now();
      }
      const rows = await this.db.query<{ id: string | number }[]>(
        'SELECT id FROM seckill_goods WHERE redis_stale = 1',
      );
      for (const row of rows) await this.bringBack(Number(row.id));
    } catch (error) {
      this.logger.debug(`stale sales not brought back yet: ${(error as Error).message}`);
    } finally {
      this.running = false;
    }
  }

  private async bringBack(goodsId: number): Promise<void> {
    const lock = await this.locks.tryLockJob(`fallback-return:${goodsId}`, LOCK_TTL_MS);
    if (!lock) return;
    try {
      // Read again under the lock: another instance may have rebuilt it since.
      const [row] = await this.db.query<{ stale: number }[]>(
        'SELECT redis_stale AS stale FROM seckill_goods WHERE id = ?',
        [goodsId],
      );
      if (Number(row?.stale) !== 1) {
        this.wipedAt.delete(goodsId);
        return;
      }
      await this.stock.forget(goodsId);
      if (!this.wipedAt.has(goodsId)) this.wipedAt.set(goodsId, Date.now());
      const result = await this.preheat.rebuildFromMysql(goodsId, this.wipedAt.get(goodsId)!);
      this.wipedAt.delete(goodsId);
      this.logger.warn(
        `sale brought back to redis from mysql: goods=${goodsId} stock=${result.stock}`,
      );
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      this.logger.log(`sale not brought back yet: goods=${goodsId} ${error.message}`);
    } finally {
      await lock.release();
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
