import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error.js';
import { FaultInjectorService } from '../../config/fault-injector.service.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { PreheatService } from '../preheat/preheat.service.js';
import { SaleStateLockService } from '../sale-store/sale-state-lock.service.js';
import { DatabaseBarrierService } from '../fallback/database-barrier.service.js';
import { RedisDownPolicy } from '../fallback/redis-down.policy.js';

const EVERY_MS = 500;
/** Rows of old barriers and beats are dropped this often. */
const PRUNE_EVERY_MS = 600_000;

/**
 * Brings back to Redis each sale MySQL marks `redis_stale` (sold by the fallback, or written by a
 * consumer without Redis), once Redis answers: it is rebuilt from MySQL as after a restart
 * (PreheatService: what Redis holds of it wiped first, then the order barrier, then the load, in
 * the transaction that closes the fallback and clears the mark). The wipe comes first so that no
 * instance sells the old copy meanwhile (they hold the Redis path until the sale is loaded; see
 * FallbackGateService). Under the goods' sale-state lock, the mark read again once it is held: a rebuild
 * by another path (the restart's, a preheat) that cleared it meanwhile is left alone.
 * Cluster-wide work, run where the consumers run (the rebuild waits for their drain).
 */
@Injectable()
export class FallbackReturnService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(FallbackReturnService.name);
  private timer?: NodeJS.Timeout;
  private running = false;
  private prunedAt = 0;

  constructor(
    private readonly goods: GoodsRepository,
    private readonly preheat: PreheatService,
    private readonly saleLock: SaleStateLockService,
    private readonly faults: FaultInjectorService,
    private readonly barriers: DatabaseBarrierService,
    private readonly policy: RedisDownPolicy,
  ) {}

  onModuleInit(): void {
    if (!this.policy.sellsThroughDatabase) return;
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
      for (const goodsId of await this.goods.staleIds()) await this.bringBack(goodsId);
    } catch (error) {
      this.logger.debug(`stale sales not brought back yet: ${(error as Error).message}`);
    } finally {
      this.running = false;
    }
  }

  private async bringBack(goodsId: number): Promise<void> {
    try {
      await this.saleLock.hold(goodsId, 'fallback-return', async (held) => {
        // Read again under the lock: another path may have rebuilt it since (its history read
        // cleared the mark), and what it loaded must not be wiped.
        if (!(await this.goods.isRedisStale(goodsId))) return;
        await this.faults.pausePoint('fallback-return-stale-read', { goodsId });
        const result = await this.preheat.rebuildFromMysql(held);
        this.logger.warn(
          `sale brought back to redis from mysql: goods=${goodsId} stock=${result.stock}`,
        );
      });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      this.logger.log(`sale not brought back yet: goods=${goodsId} ${error.message}`);
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
