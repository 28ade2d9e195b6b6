import {
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { appConfig } from '../../config/app.config.js';
import type { AppSection } from '../../config/app-section.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { RedisWatchdogService } from '../../infra/redis/redis-watchdog.service.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import type { OpenBarrier } from '../messaging/redis-barrier.store.js';
import { BucketCountsStore } from '../sale-store/bucket-counts.store.js';
import { SaleLoaderStore } from '../sale-store/sale-loader.store.js';
import { DatabaseBarrierService } from './database-barrier.service.js';

/**
 * How often the stale goods are read again: on every tick, not only after a drop seen here, so an
 * instance that kept reaching Redis learns within this long that another opened a goods to MySQL.
 */
const REFRESH_MS = 200;
/**
 * The marks last read are trusted this long after that read began; past it the Redis path is held
 * for every goods (MySQL decides, or the purchase is 503). An instance that cannot read MySQL
 * cannot learn that another opened a goods to the fallback, so it stops selling through Redis on
 * its own: the fallback opens a goods only once this lease of every instance has run out since
 * the goods was held (DatabasePurchaseService), and none sells it through Redis from then on.
 */
export const MARKS_LEASE_MS = 2_000;

/** The fallback barrier of one outage (as this instance saw it: from one drop to the next). */
interface Fence {
  outage: number;
  /** The barrier must be opened at or after this (MySQL's clock, epoch ms). */
  notBefore: number;
  /** When the connection dropped (monotonic ms): purchases Redis accepted before are in the broker by then + PUBLISH_CONFIRM_TIMEOUT_MS. */
  since: number;
  barrier?: OpenBarrier;
  passed: boolean;
  running: boolean;
}

/**
 * This instance's side of the switch between Redis and MySQL (REDIS_DOWN_MODE=database).
 *
 * Into the fallback: the first database-mode purchase of an outage starts a barrier through the
 * orders queue (DatabaseBarrierService: the order barrier with its registry in MySQL), opened once every
 * purchase Redis accepted before the drop is in the broker. It passes once the consumers have
 * settled every order message taken before it; they write them without Redis meanwhile (see
 * IngestLedgerService). Then MySQL's stock counts every order Redis accepted, and a goods may be
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
export class FallbackGateService
  implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger(FallbackGateService.name);
  /** Switched on by the policy that sells through MySQL (SellThroughDatabasePolicy). */
  private enabled = false;
  /** Outages: from a drop until every master is identified again. */
  private outages = 0;
  private down = false;
  private droppedAt = 0;
  /** The marks have not been read since start (cleared by the first read that succeeds). */
  private unread = false;
  /** Masters (watchdog.mastersOf) whose connection dropped since the marks were last read. */
  private droppedSinceRead = new Set<string>();
  /** Masters that were not identified when the marks were last read: held until read again. */
  private heldMasters = new Set<string>();
  private readonly stale = new Set<number>();
  /**
   * When the last read of the marks that succeeded began, on the monotonic clock: the lease is a
   * span of this host's time, which a step of the wall clock (NTP, an operator) must not stretch
   * or cut short.
   */
  private marksReadAt = 0;
  private fence?: Fence;
  private timer?: NodeJS.Timeout;
  private refreshing = false;
  private stopped = false;

  constructor(
    private readonly watchdog: RedisWatchdogService,
    private readonly goods: GoodsRepository,
    private readonly buckets: BucketCountsStore,
    private readonly loader: SaleLoaderStore,
    private readonly barriers: DatabaseBarrierService,
    @InjectConfig(appConfig) private readonly app: AppSection,
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
  ) {}

  /** Switches the gate on, where purchases are served; before the module's init. */
  enable(): void {
    if (this.app.role === 'worker') return;
    this.enabled = true;
    this.unread = true;
  }

  /** Before the first request: an instance started while sales wait for their rebuild holds them. */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.enabled) return;
    try {
      await this.readMarks();
      this.unread = false;
    } catch (error) {
      this.logger.warn(`fallback marks not read at start: ${(error as Error).message}`);
    }
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.watchdog.onDrop((master) => {
      this.droppedSinceRead.add(master);
      if (this.down) return;
      this.down = true;
      this.outages++;
      this.droppedAt = performance.now();
    });
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  /** The Redis path must not sell this goods now: MySQL decides it (or refuses it) instead. */
  holdsRedisPath(goodsId: number): boolean {
    if (!this.enabled) return false;
    if (this.unread || this.stale.has(goodsId)) return true;
    if (performance.now() - this.marksReadAt > MARKS_LEASE_MS) return true;
    if (this.droppedSinceRead.size === 0 && this.heldMasters.size === 0) return false;
    return this.watchdog
      .mastersOf(goodsId, this.buckets.known(goodsId))
      .some((master) => this.droppedSinceRead.has(master) || this.heldMasters.has(master));
  }

  /**
   * Redis cannot be reached for this goods from here (the watchdog's view, no probe): any master
   * holding its goods-wide keys or one of its stock buckets.
   */
  redisDown(goodsId: number): boolean {
    return !this.watchdog.identifiedFor(goodsId, this.buckets.known(goodsId));
  }

  /** This goods was opened to the fallback: held from the Redis path until rebuilt. */
  opened(goodsId: number): void {
    this.stale.add(goodsId);
  }

  /**
   * When (MySQL's clock) the barrier of the current outage was opened, once it has passed and was
   * opened at `notBefore` or later (MySQL's clock, epoch ms; else another is begun); null
   * before, and then it is started in the background. Only the outage as this instance saw it
   * counts: a drop after the server was identified again starts another.
   */
  fenceOpenedAt(notBefore: number): Date | null {
    let fence = this.fence;
    if (fence?.outage !== this.outages || (fence.passed && fence.barrier!.openedAt < notBefore)) {
      fence = this.fence = {
        outage: this.outages,
        notBefore,
        since: this.droppedAt || performance.now(),
        passed: false,
        running: false,
      };
    } else if (!fence.passed) {
      fence.notBefore = Math.max(fence.notBefore, notBefore);
    }
    if (!fence.passed && !fence.running) {
      fence.running = true;
      void this.runFence(fence).finally(() => {
        fence.running = false;
      });
    }
    return fence.passed ? new Date(fence.barrier!.openedAt) : null;
  }

  private async runFence(fence: Fence): Promise<void> {
    const openAt = fence.since + this.rabbitmq.publishConfirmTimeoutMs;
    for (let attempt = 0; !this.stopped && this.down && fence.outage === this.outages; attempt++) {
      if (performance.now() < openAt) await sleep(openAt - performance.now());
      try {
        fence.barrier ??= await this.barriers.open();
        if (fence.barrier.openedAt < fence.notBefore) {
          // Opened too early for the goods that asked (MySQL's clock): one more after it.
          fence.barrier = undefined;
          await sleep(REFRESH_MS);
          continue;
        }
        const state = await this.barriers.check(fence.barrier);
        if (state === 'restart') fence.barrier = undefined;
        if (state === 'passed') {
          fence.passed = true;
          this.logger.warn(
            `fallback barrier passed, MySQL may sell: id=${fence.barrier!.id} ${Math.round(performance.now() - fence.since)} ms after redis dropped`,
          );
          return;
        }
      } catch (error) {
        this.logger.warn(`fallback barrier not passed yet: ${(error as Error).message}`);
      }
      await sleep(backoffWithJitter(attempt, 50, 500));
    }
  }

  /**
   * Reads which goods Redis must not sell yet, and frees the Redis path of those rebuilt and of
   * the masters identified again. Goes on while a master is down: a mark set meanwhile (by
   * another instance, or a consumer) must be known by the time it is back.
   */
  private async refresh(): Promise<void> {
    if (this.refreshing) return;
    // Only a read begun once a master is identified again releases that master's hold.
    const unidentified = this.watchdog.unidentified();
    if (unidentified.length === 0) this.down = false;
    // No early return when this instance saw no drop: another instance (or a consumer) may have
    // marked a goods stale while this one kept reaching Redis, and Redis must not sell it here
    // then. One read of the marked rows per tick. And a read that failed at start (`unread`) is retried here,
    // or every goods would stay held from the Redis path until a restart.
    this.refreshing = true;
    const dropped = this.droppedSinceRead;
    this.droppedSinceRead = new Set();
    try {
      await this.readMarks();
      // As for a drop: the masters not identified when the read began stay held until the next
      // read, and a drop during this read is in droppedSinceRead again.
      if (this.unread) {
        this.unread = false;
        this.logger.log(`fallback marks read, not at start: ${this.stale.size} goods held`);
      }
      const released = [...this.heldMasters].filter((m) => !unidentified.includes(m));
      this.heldMasters = new Set(unidentified);
      if (released.length > 0) {
        this.logger.log(`redis path open again, held from it: ${this.stale.size} goods`);
      }
    } catch (error) {
      for (const master of dropped) this.droppedSinceRead.add(master);
      this.logger.debug(`fallback marks not read: ${(error as Error).message}`);
    } finally {
      this.refreshing = false;
    }
  }

  private async readMarks(): Promise<void> {
    const startedAt = performance.now();
    const held = new Set(await this.goods.staleIds());
    for (const goodsId of this.stale) {
      if (held.has(goodsId)) continue;
      // Rebuilt in MySQL; Redis sells it once its copy is loaded.
      if (!(await this.loader.isPreheated(goodsId).catch(() => false))) held.add(goodsId);
      else this.logger.warn(`sale back on redis: goods=${goodsId}`);
    }
    this.stale.clear();
    for (const goodsId of held) this.stale.add(goodsId);
    this.marksReadAt = startedAt;
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
