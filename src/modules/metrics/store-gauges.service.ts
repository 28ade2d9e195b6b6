import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { poolStats, type PoolStats } from '../../infra/database/pool-stats.js';
import { ReplicaReadsService } from '../../infra/database/replica-reads.service.js';
import { RedisWatchdogService } from '../../infra/redis/redis-watchdog.service.js';
import { MetricsService } from './metrics.service.js';

/**
 * This instance's hold on its stores, read from memory at each scrape: whether Redis is ready
 * for selling (every master connected and identified: the watchdog's view, the one the purchase
 * path acts on) and the MySQL pools' connections and waiters.
 */
@Injectable()
export class StoreGaugesService implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly watchdog: RedisWatchdogService,
    private readonly replicas: ReplicaReadsService,
    @InjectDataSource() private readonly primary: DataSource,
  ) {}

  onModuleInit(): void {
    const { redisReady, mysqlPoolConnections, mysqlPoolWaiting } = this.metrics;
    this.metrics.collectOnScrape(
      'stores',
      [redisReady, mysqlPoolConnections, mysqlPoolWaiting],
      () => {
        redisReady.set(this.watchdog.unidentified().length === 0 ? 1 : 0);
        this.setPool('primary', poolStats(this.primary));
        this.setPool('replica', this.replicas.replicaPool());
      },
    );
  }

  private setPool(pool: 'primary' | 'replica', stats: PoolStats | null): void {
    if (!stats) return;
    this.metrics.mysqlPoolConnections.set({ pool, state: 'used' }, stats.used);
    this.metrics.mysqlPoolConnections.set({ pool, state: 'free' }, stats.free);
    this.metrics.mysqlPoolWaiting.set({ pool }, stats.waiting);
  }
}
