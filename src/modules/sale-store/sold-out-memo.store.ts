import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { edgeRouteConfig, type EdgeRouteConfig } from '../../common/http/route-config.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { RedisSubscriberService } from '../../infra/redis/redis-subscriber.service.js';
import { STOCK_BACK_CHANNEL } from '../../infra/redis/seckill-keys.js';
import { BucketHints } from './bucket-hints.js';

/**
 * How long a bucket seen empty is skipped at most (bounded by SOLD_OUT_MEMO_MS too): short, since
 * a missed stock-back only delays the sale of returned stock by that much.
 */
const BUCKET_HINT_MS = 500;

/** Marks the route whose requests the sold-out memo may answer before any other work. */
export const SoldOutShortcut = () => edgeRouteConfig({ soldOutShortcut: true });

/**
 * Remembers, per instance, that a goods was found sold out, so that the crowd that keeps
 * clicking after the last unit is answered SOLD_OUT from memory: no Redis call, no rate-limit
 * budget. It only ever refuses, never sells, so it cannot oversell. Stock that comes back is
 * announced on a Redis channel and drops the memo on every instance at once; a memo also lapses
 * after SOLD_OUT_MEMO_MS, which bounds how long a missed announcement can keep a sale shut.
 * While the subscription is down nothing is memoised, and what was memoised before is dropped.
 */
@Injectable()
export class SoldOutMemoStore implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SoldOutMemoStore.name);
  private readonly until = new Map<number, number>();
  private listening = false;
  private stopped = false;
  /**
   * The buckets of a goods seen empty a moment ago (see BucketHints); cleared with the memo by a
   * stock-back announcement, and kept only while that announcement can be heard.
   */
  readonly bucketHints: BucketHints;

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly subscriber: RedisSubscriberService,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {
    this.bucketHints = new BucketHints(Math.min(seckill.soldOutMemoMs, BUCKET_HINT_MS));
  }

  onModuleInit(): void {
    if (this.seckill.soldOutMemoMs === 0) return;
    this.subscriber.onDown(() => {
      this.listening = false;
      this.until.clear();
      this.bucketHints.clearAll();
    });
    this.subscriber.onBack(() => {
      this.listening = true;
    });
    this.listenForStockBack();
  }

  private listenForStockBack(): void {
    this.subscriber
      .listen(STOCK_BACK_CHANNEL, (goodsId) => {
        this.until.delete(Number(goodsId));
        this.bucketHints.clear(Number(goodsId));
      })
      .then(
        () => {
          this.listening = true;
        },
        (error: Error) => {
          if (this.stopped) return;
          // Nothing is memoised meanwhile; the subscription is tried again.
          this.logger.warn(`stock-back subscription failed: ${error.message}`);
          setTimeout(() => this.stopped || this.listenForStockBack(), 1_000).unref();
        },
      );
  }

  /** True while this goods is known to be sold out (and the memo is still fresh). */
  isSoldOut(goodsId: number): boolean {
    const until = this.until.get(goodsId);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.until.delete(goodsId);
    return false;
  }

  /** Redis answered SOLD_OUT with nothing left at all (a smaller order could still fit otherwise). */
  markSoldOut(goodsId: number): void {
    if (this.listening) this.until.set(goodsId, Date.now() + this.seckill.soldOutMemoMs);
  }

  /** A bucket of a goods was found empty: skipped for a moment (see BucketHints). */
  markBucketEmpty(goodsId: number, bucket: number): void {
    if (this.listening) this.bucketHints.markEmpty(goodsId, bucket);
  }

  /** Tells every instance, this one first, that the goods may have stock again. */
  async announceStockBack(goodsId: number): Promise<void> {
    this.until.delete(goodsId);
    this.bucketHints.clear(goodsId);
    if (this.seckill.soldOutMemoMs === 0) return;
    await this.redis.publish(STOCK_BACK_CHANNEL, String(goodsId));
  }

  /**
   * After stock really came back (a release, restock, load or repair): announceStockBack, best
   * effort. A lost announcement only keeps the memo until it lapses (SOLD_OUT_MEMO_MS).
   */
  async stockBack(goodsId: number): Promise<void> {
    await this.announceStockBack(goodsId).catch(() => undefined);
  }

  /**
   * The goods id when this request may be answered SOLD_OUT from memory (its route allows it, it
   * has no Idempotency-Key, since a retry must get its stored answer, maybe its own 202, and its
   * goods is known to be sold out); 0 when it may not.
   */
  answersSoldOut(request: FastifyRequest): number {
    if (this.until.size === 0) return 0;
    if ((request.routeOptions.config as EdgeRouteConfig).soldOutShortcut !== true) return 0;
    if (request.headers['idempotency-key'] !== undefined) return 0;
    const goodsId = Number((request.params as Record<string, string> | undefined)?.goodsId);
    return Number.isSafeInteger(goodsId) && goodsId > 0 && this.isSoldOut(goodsId) ? goodsId : 0;
  }

  onApplicationShutdown(): void {
    this.stopped = true;
  }
}
