import { BeforeApplicationShutdown, Inject, Injectable, type MessageEvent } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { randomUUID } from 'node:crypto';
import { Observable } from 'rxjs';
import { DomainError, orUnavailable } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { LuaScripts } from '../../infra/redis/lua-scripts.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import {
  resultStreamAddressSlotsKey,
  resultStreamSlotsKey,
} from '../../infra/redis/seckill-keys.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { PurchaseLedger } from '../sale-store/purchase-ledger.service.js';
import { PurchaseResultService } from './purchase-result.service.js';
import type { PurchaseResultView } from './purchase.types.js';
import { ResultEvents } from './result-events.js';

/** A slot outlives its stream by this much before Redis drops it on its own. */
const SLOT_MARGIN_MS = 60_000;

const isFinal = (view: PurchaseResultView) => view.status === 'SUCCESS' || view.status === 'FAILED';

/** The result's JSON, its fields in one order whichever store it came from (to tell changes). */
function eventData(view: PurchaseResultView): string {
  const { status, requestId, orderNo, reason } = view;
  return JSON.stringify({ status, requestId, orderNo, reason });
}

/** Steps that undo a stream's setup, run once, last first, however the stream ends. */
class Teardown {
  private steps: (() => void)[] = [];

  add(step: () => void): void {
    this.steps.push(step);
  }

  run(): void {
    const steps = this.steps.reverse();
    this.steps = [];
    for (const step of steps) step();
  }
}

/**
 * The result as it changes, for one stream: the current one at once, then each different one
 * (re-read from Redis when its channel says it changed, one read at a time), ending after a final
 * one, at the stream's lifetime, or when the instance shuts down. Every `heartbeatMs` a comment
 * keeps proxies from closing a quiet connection.
 */
class ResultFeed {
  private sent?: string;
  private emit?: (view: PurchaseResultView) => void;
  private changedBeforeSubscribe = false;
  private reading = false;
  private readAgain = false;

  constructor(
    private readonly readLive: () => Promise<PurchaseResultView | null>,
    private readonly options: { heartbeatMs: number; lifetimeMs: number },
    private readonly enders: Set<() => void>,
  ) {}

  /** The result's channel said it changed. */
  changed(): void {
    if (this.emit) void this.reread();
    else this.changedBeforeSubscribe = true;
  }

  events(initial: PurchaseResultView): Observable<MessageEvent> {
    return new Observable<MessageEvent>((subscriber) => {
      const end = () => subscriber.complete();
      this.emit = (view) => {
        const data = eventData(view);
        if (data === this.sent) return;
        this.sent = data;
        subscriber.next({ data });
        if (isFinal(view)) end();
      };
      this.emit(initial);
      if (subscriber.closed) return;
      const heartbeat = setInterval(
        () => subscriber.next({ comment: 'heartbeat' }),
        this.options.heartbeatMs,
      );
      const lifetime = setTimeout(end, this.options.lifetimeMs);
      this.enders.add(end);
      // A change heard while the first result was being read: that read may predate it.
      if (this.changedBeforeSubscribe) void this.reread();
      return () => {
        this.emit = undefined;
        clearInterval(heartbeat);
        clearTimeout(lifetime);
        this.enders.delete(end);
      };
    });
  }

  private async reread(): Promise<void> {
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    try {
      do {
        this.readAgain = false;
        // A failed read is skipped: the next change, or the client's reconnection, reads again.
        const live = await this.readLive().catch(() => null);
        if (live && this.emit) this.emit(live);
      } while (this.readAgain && this.emit);
    } finally {
      this.reading = false;
    }
  }
}

/**
 * GET /api/v1/seckill/:goodsId/result/stream. A stream holds a slot of its user's (at most
 * RESULT_STREAM_MAX_PER_USER across instances, in Redis), one of its client address's (at most
 * RESULT_STREAM_MAX_PER_IP, likewise: many accounts behind one address cannot hold thousands)
 * and one of this instance's (at most RESULT_STREAM_MAX_PER_INSTANCE); beyond any, it is 429.
 * While open it costs no query: a read of the user's result in Redis per change announced on its
 * channel (ResultEvents).
 */
@Injectable()
export class ResultStreams implements BeforeApplicationShutdown {
  private openHere = 0;
  private readonly enders = new Set<() => void>();

  constructor(
    private readonly results: PurchaseResultService,
    private readonly ledger: PurchaseLedger,
    private readonly events: ResultEvents,
    private readonly lua: LuaScripts,
    private readonly metrics: MetricsService,
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {}

  /**
   * Sets a stream up: its slots, its channel, its first result. `ended` aborts however the
   * response ends (the client left, the feed completed, setup failed), which gives it all back.
   * `clientAddress` is the request's in its one form, as the blocklist and the rate limits count
   * it (an IPv6 client by its /64).
   */
  async open(
    goodsId: number,
    userId: number,
    clientAddress: string,
    ended: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const { maxPerUser, maxPerIp } = this.seckill.resultStream;
    const teardown = new Teardown();
    ended.addEventListener('abort', () => teardown.run(), { once: true });
    try {
      this.takeInstanceSlot(teardown);
      await this.takeSharedSlot(
        resultStreamSlotsKey(userId),
        maxPerUser,
        `You have ${maxPerUser} result streams open already; close one first`,
        teardown,
      );
      await this.takeSharedSlot(
        resultStreamAddressSlotsKey(clientAddress),
        maxPerIp,
        `Your address has ${maxPerIp} result streams open already; try again shortly`,
        teardown,
      );
      const feed = new ResultFeed(
        () => this.ledger.result(goodsId, userId),
        this.seckill.resultStream,
        this.enders,
      );
      teardown.add(await this.events.watch(goodsId, userId, () => feed.changed()));
      // After the watch: a change from here on is heard, so none falls between read and watch.
      const initial = await this.results.result(goodsId, userId);
      if (ended.aborted) teardown.run();
      return feed.events(initial);
    } catch (error) {
      teardown.run();
      throw error;
    }
  }

  private takeInstanceSlot(teardown: Teardown): void {
    if (this.openHere >= this.seckill.resultStream.maxPerInstance) {
      throw tooMany('This server holds as many result streams as it may; try again shortly', 1);
    }
    this.openHere += 1;
    this.metrics.resultStreams.inc();
    teardown.add(() => {
      this.openHere -= 1;
      this.metrics.resultStreams.dec();
    });
  }

  /** One of the slots a user or an address holds across instances (lua/result-stream-slot.lua). */
  private async takeSharedSlot(
    key: string,
    limit: number,
    refusal: string,
    teardown: Teardown,
  ): Promise<void> {
    const streamId = randomUUID();
    const slotTtlMs = this.seckill.resultStream.lifetimeMs + SLOT_MARGIN_MS;
    const taken = await orUnavailable('Redis', () =>
      this.lua.run('resultStreamSlot', key, streamId, limit, slotTtlMs),
    );
    if (taken !== 1) throw tooMany(refusal, 5);
    // Best effort: a slot not given back lapses after the stream's lifetime.
    teardown.add(() => void this.redis.zrem(key, streamId).catch(() => undefined));
  }

  /** Ends every open stream, so that the HTTP server can close (their clients reconnect). */
  beforeApplicationShutdown(): void {
    for (const end of [...this.enders]) end();
  }
}

function tooMany(message: string, retryAfterSeconds: number): DomainError {
  return new DomainError('TOO_MANY_REQUESTS', message, { retryAfterSeconds });
}
