import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { DomainError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { RedisWatchdog } from '../../infra/redis/redis-watchdog.js';
import { GoodsService } from '../goods/goods.service.js';
import { StockService } from '../stock/stock.service.js';
import { PreheatService } from './preheat.service.js';

/**
 * After Redis restarts or fails over, the purchase route stays closed (503, nothing sold) until
 * every open or upcoming sale is back in Redis, rebuilt from MySQL (see PreheatService.rebuild).
 * Every instance notices on its own; one rebuilds each sale (a lock), the others wait for it.
 */
@Injectable()
export class SaleRecovery implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SaleRecovery.name);
  private since: number | null = null;
  private stopped = false;

  constructor(
    private readonly watchdog: RedisWatchdog,
    private readonly preheat: PreheatService,
    private readonly goods: GoodsService,
    private readonly stock: StockService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.watchdog.onRestart((_previous, current) => this.begin(current));
  }

  /** Purchases are closed: Redis is being rebuilt, or not yet identified since a reconnect. */
  get recovering(): boolean {
    return this.since !== null || !this.watchdog.identifiedSinceConnect;
  }

  private begin(runId: string): void {
    if (this.since !== null) return;
    this.since = Date.now();
    this.logger.error('redis restarted: purchases closed until the sales are rebuilt from MySQL');
    void this.recover(runId);
  }

  /**
   * A restarted Redis may have come back with a snapshot (RDB/AOF, or a replica that was
   * behind): its stock, buyers and voided requests are older than the truth, and trusting them
   * could sell twice or revive a purchase that was answered 503. One instance wipes what
   * survived, so that every open sale is rebuilt from MySQL.
   */
  private async wipeSurvivors(runId: string): Promise<void> {
    if (!(await this.stock.claimRecovery(runId))) return;
    const sales = await this.goods.startingBefore(
      new Date(Date.now() + this.config.preheatLookaheadMs),
    );
    for (const sale of sales) await this.stock.forget(sale.id);
    this.logger.warn(`wiped ${sales.length} sales that survived the restart, to rebuild them`);
  }

  private async recover(runId: string): Promise<void> {
    let wiped = false;
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        if (!wiped) {
          await this.wipeSurvivors(runId);
          wiped = true;
        }
        if ((await this.pendingSales()) === 0) {
          this.logger.warn(
            `sales rebuilt; purchases open again after ${Date.now() - this.since!} ms`,
          );
          this.since = null;
          return;
        }
      } catch (error) {
        this.logger.warn(`sale rebuild not done yet: ${(error as Error).message}`);
      }
      await sleep(backoffWithJitter(attempt, 200, 2_000));
    }
  }

  /** Preheats (rebuilds) each open or upcoming sale; returns how many are not back yet. */
  private async pendingSales(): Promise<number> {
    const sales = await this.goods.startingBefore(
      new Date(Date.now() + this.config.preheatLookaheadMs),
    );
    let pending = 0;
    for (const sale of sales) {
      try {
        await this.preheat.preheat(sale.id);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        pending++;
      }
    }
    return pending;
  }

  onApplicationShutdown(): void {
    this.stopped = true;
  }
}
