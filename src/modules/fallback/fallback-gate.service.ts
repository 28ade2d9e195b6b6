import {
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { RedisWatchdog } from '../../infra/redis/redis-watchdog.js';
import type { OpenBarrier } from '../messaging/order-barrier.service.js';
import { StockService } from '../stock/stock.service.js';
import { DatabaseBarrier } from './database-barrier.service.js';

/** How often the stale goods are read again while some are held from the Redis path. */
const REFRESH_MS = 200;

/** The fallback barrier of one outage (as this instance saw it: from one drop to the next). */
interface Fence {
  outage: number;
  /** When the connection dropped: purchases Redis accepted before are in the broker by then + PUBLISH_CONFIRM_TIMEOUT_MS. */
  since: number;
  barrier?: OpenBarrier;
  passed: boolean;
  running: boolean;
}

/**
 * This instance's side of the switch between Redis and MySQL (REDIS_DOWN_MODE=database).
 *
 * Into the fallback: the first database-mode purchase of an outage starts a barrier through the
 * orders queue (DatabaseBarrier: the order barrier with its registry in MySQL), opened once every
 * purchase Redis accepted before the drop is in the broker. It passes once the consumers have
 * settled every order message taken before it; they write them without Redis meanwhile (see
 * OrderIngest.redisStep). Then MySQL's stock counts every order Redis accepted, and a goods may be
 * opened to the fallback (`fallback_open`). Until then database-mode purchases answer 503,
 * nothing taken, as without the fallback.
 *
 * Back to Redis: a goods MySQL marks `redis_stale` (the fallback sold it, or a consumer wrote
 * without Redis) is held from the Redis path, and keeps selling through MySQL while it is
 * rebuilt, until its rebuild cleared the mark and its sale is back in Redis. After any drop of
 * the connection the Redis path is held for every goods until those marks were read from MySQL
 * once the server was identified again: a Redis back with its data intact (a network outage, not
 * a restart) holds stock and buyers from before the fallback sold.
 */
@Injectable()
export class FallbackGate implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(FallbackGate.name);
  private readonly enabled: boolean;
  /** Drops of the connection seen (each failed reconnect attempt is one too). */
  private drops = 0;
  /** Outages: from a drop after the server was identified until it is identified again. */
  private outages = 0;
  private down = false;
  private droppedAt = 0;
  /** The marks have not been read since the last drop (or since start). */
  private unchecked: boolean;
  private readonly stale = new Set<number>();
  private fence?: Fence;
  private timer?: NodeJS.Timeout;
  private refreshing = false;
  private stopped = false;

  constructor(
    private readonly watchdog: RedisWatchdog,
    @InjectDataSource() private readonly db: DataSource,
    private readonly stock: StockService,
    private readonly barriers: DatabaseBarrier,
    @InjectConfig() private readonly config: AppConfig,
  ) {
    // Only where purchases are served.
    this.enabled = config.redisDownMode === 'database' && config.appRole !== 'worker';
    this.unchecked = this.enabled;
  }

  /** Before the first request: an instance started while sales wait for their rebuild holds them. */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.enabled) return;
    try {
      await this.readMarks();
      this.unchecked = false;
    } catch (error) {
      this.logger.warn(`fallback marks not read at start: ${(error as Error).message}`);
    }
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.watchdog.onDrop(() => {
      this.drops++;
      this.unchecked = true;
      if (this.down) return;
      this.down = true;
      this.outages++;
      this.droppedAt = Date.now();
    });
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  /** The Redis path must not sell this goods now: MySQL decides it (or refuses it) instead. */
  holdsRedisPath(goodsId: number): boolean {
    return this.enabled && (this.unchecked || this.stale.has(goodsId));
  }

  /** Redis cannot be reached for this goods from here (the watchdog's view, no probe). */
  redisDown(goodsId: number): boolean {
    return !this.watchdog.identifiedFor(goodsId);
  }

  /** This goods was opened to the fallback: held from the Redis path until rebuilt. */
  opened(goodsId: number): void {
    this.stale.add(goodsId);
  }

  /**
   * When (MySQL's clock) the barrier of the current outage was opened, once it has passed; null
   * before, and then it is started in the background. Only the outage as this instance saw it
   * counts: a drop after the server was identified again starts another.
   */
  fenceOpenedAt(): Date | null {
    if (this.fence?.outage !== this.outages) {
      this.fence = {
        outage: this.outages,
        since: this.droppedAt || Date.now(),
        passed: false,
        running: false,
      };
    }
    const fence = this.fence;
    if (!fence.passed && !fence.running) {
      fence.running = true;
      void this.runFence(fence).finally(() => {
        fence.running = false;
      });
    }
    return fence.passed ? new Date(fence.barrier!.openedAt) : null;
  }

  private async runFence(fence: Fence): Promise<void> {
    const openAt = fence.since + this.config.publishConfirmTimeoutMs;
    for (let attempt = 0; !this.stopped && this.down && fence.outage === this.outages; attempt++) {
      if (Date.now() < openAt) await sleep(openAt - Date.now());
      try {
        fence.barrier ??= await this.barriers.open();
        const state = await this.barriers.check(fence.barrier);
        if (state === 'restart') fence.barrier = undefined;
        if (state === 'passed') {
          fence.passed = true;
          this.logger.warn(
            `fallback barrier passed, MySQL may sell: id=${fence.barrier!.id} ${Date.now() - fence.since} ms after redis dropped`,
          );
          return;
        }
      } catch (error) {
        this.logger.warn(`fallback barrier not passed yet: ${(error as Error).message}`);
      }
      await sleep(backoffWithJitter(attempt, 50, 500));
    }
  }

  /** Reads which goods Redis must not sell yet; frees the Redis path of those rebuilt. */
  private async refresh(): Promise<void> {
    if (this.refreshing || (!this.unchecked && this.stale.size === 0)) return;
    this.refreshing = true;
    const drops = this.drops;
    // Only a read begun while the server is identified releases the hold of a drop.
    const identified = !this.redisDown(0);
    if (identified) this.down = false;
    try {
      await this.readMarks();
      if (identified && drops === this.drops && this.unchecked) {
        this.unchecked = false;
        this.logger.log(`redis path open again, held from it: ${this.stale.size} goods`);
      }
    } catch (error) {
      this.logger.debug(`fallback marks not read: ${(error as Error).message}`);
    } finally {
      this.refreshing = false;
    }
  }

  private async readMarks(): Promise<void> {
    const rows = await this.db.query<{ id: string | number }[]>(
      'SELECT id FROM seckill_goods WHERE redis_stale = 1',
    );
    const held = new Set(rows.map((row) => Number(row.id)));
    for (const goodsId of this.stale) {
      if (held.has(goodsId)) continue;
      // Rebuilt in MySQL; Redis sells it once its copy is loaded.
      if (!(await this.stock.isPreheated(goodsId).catch(() => false))) held.add(goodsId);
      else this.logger.warn(`sale back on redis: goods=${goodsId}`);
    }
    this.stale.clear();
    for (const goodsId of held) this.stale.add(goodsId);
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
