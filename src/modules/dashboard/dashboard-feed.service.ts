import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { DomainError, UnavailableError } from '../../common/errors/domain-error.js';
import { DashboardStore } from './dashboard.store.js';
import { SaleBoardService } from './sale-board.service.js';

/** Open feeds per instance; one more is refused 429 (each is an operator's browser tab). */
export const MAX_FEEDS = 16;
/** Open feeds per admin (the token's subject) on an instance: one admin cannot take them all. */
export const MAX_FEEDS_PER_ADMIN = 4;
/**
 * A feed whose socket has stayed full this long is cut: its client is not reading. (The kernel's
 * buffers take megabytes first, so a client that never reads small frames is ended by the
 * lifetime below instead.)
 */
export const STALLED_FEED_MS = 5_000;
/** A feed ends after this and the page reconnects at once: no client holds a slot for good. */
export const FEED_LIFETIME_MS = 10 * 60_000;
const TICK_MS = 1_000;
/** A comment line this often, so that proxies keep a feed open while snapshots fail. */
const HEARTBEAT_MS = 15_000;
/** A client this far behind (bytes it has not read) is cut off rather than buffered for. */
const MAX_BUFFERED_BYTES = 1 << 20;

/** Another instance's snapshot older than this is not waited for: this one builds. */
const SHARED_STALE_MS = 3_000;
const SHARED_TTL_MS = 10_000;

interface FeedState {
  /** The admin's id (the token's subject). */
  admin: number;
  /** Since when the socket has been full (a write said to wait for `drain`). */
  stalledSince?: number;
  lifetime: NodeJS.Timeout;
}

/**
 * The admin event stream (`GET /api/v1/admin/events`). While at least one feed is open, this
 * instance ticks once a second and writes the same frame to every open feed; with none open it
 * does nothing. Each second one instance of the fleet builds the snapshot (SaleBoardService): the first
 * to tick in that wall-clock second takes the second's build key in Redis, builds, serialises
 * once and stores the JSON; the others' ticks read it (one GET) and build only when it is stale
 * (its builder went away). So a second costs one snapshot whatever the number of dashboards and
 * of instances showing one, and nothing once the last dashboard closes.
 */
@Injectable()
export class DashboardFeedService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(DashboardFeedService.name);
  private readonly feeds = new Map<ServerResponse, FeedState>();
  private ticker?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  private building = false;
  private closing = false;
  /** The latest frame and when it was built: a feed that opens gets it at once if fresh. */
  private latest?: { at: number; frame: string };

  constructor(
    private readonly board: SaleBoardService,
    private readonly store: DashboardStore,
  ) {}

  get openFeeds(): number {
    return this.feeds.size;
  }

  /**
   * Takes the response over: a 200 event stream until the client goes, stops reading, the feed's
   * lifetime ends or the app stops.
   */
  attach(reply: FastifyReply, admin: number): void {
    if (this.closing) throw new UnavailableError('The server is shutting down');
    if (this.feeds.size >= MAX_FEEDS) {
      throw tooMany('Too many dashboard feeds open here');
    }
    if (
      [...this.feeds.values()].filter((feed) => feed.admin === admin).length >= MAX_FEEDS_PER_ADMIN
    ) {
      throw tooMany(`You have ${MAX_FEEDS_PER_ADMIN} dashboard feeds open here already`);
    }
    reply.hijack();
    const feed = reply.raw;
    // The security headers are on the raw response already (the onRequest hook).
    feed.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store, no-transform',
      Connection: 'keep-alive',
      // nginx would otherwise buffer the stream.
      'X-Accel-Buffering': 'no',
    });
    feed.socket?.setNoDelay(true);
    this.feeds.set(feed, { admin, lifetime: setTimeout(() => this.end(feed), FEED_LIFETIME_MS) });
    feed.on('close', () => this.detach(feed));
    feed.on('drain', () => {
      const state = this.feeds.get(feed);
      if (state) state.stalledSince = undefined;
    });
    this.write(feed, ': seckill dashboard feed, one snapshot a second\n\n');
    if (this.latest && Date.now() - this.latest.at < SHARED_STALE_MS) {
      this.write(feed, this.latest.frame);
    }
    this.start();
  }

  private start(): void {
    if (this.ticker) return;
    this.ticker = setInterval(() => void this.tick(), TICK_MS);
    this.heartbeat = setInterval(() => this.broadcast(': heartbeat\n\n'), HEARTBEAT_MS);
    void this.tick();
  }

  private stop(): void {
    clearInterval(this.ticker);
    clearInterval(this.heartbeat);
    this.ticker = undefined;
    this.heartbeat = undefined;
    this.latest = undefined;
  }

  private detach(feed: ServerResponse): void {
    const state = this.feeds.get(feed);
    if (!state) return;
    clearTimeout(state.lifetime);
    this.feeds.delete(feed);
    if (this.feeds.size === 0) this.stop();
  }

  /**
   * Its slot is free at once. A client that reads gets the end of the stream; one that does not
   * would keep the socket until its bytes drain, so it is cut.
   */
  private end(feed: ServerResponse): void {
    this.detach(feed);
    feed.end();
    setTimeout(() => {
      if (!feed.writableFinished) feed.destroy();
    }, STALLED_FEED_MS).unref();
  }

  private write(feed: ServerResponse, frame: string): void {
    const state = this.feeds.get(feed);
    if (!feed.write(frame) && state) state.stalledSince ??= Date.now();
  }

  /** Cuts the feeds whose client has read nothing for STALLED_FEED_MS: their slots are free. */
  private cutStalled(now: number): void {
    for (const [feed, { stalledSince }] of this.feeds) {
      if (stalledSince !== undefined && now - stalledSince >= STALLED_FEED_MS) {
        this.detach(feed);
        feed.destroy();
      }
    }
  }

  /** One snapshot for every open feed; a tick that finds the last one still building is skipped. */
  private async tick(): Promise<void> {
    this.cutStalled(Date.now());
    if (this.building || this.feeds.size === 0) return;
    this.building = true;
    try {
      const snapshot = await this.snapshotJson();
      // Another instance's snapshot already sent (its builder is a second behind ours): skip.
      if (snapshot === null || (this.latest && snapshot.at <= this.latest.at)) return;
      const frame = `data: ${snapshot.json}\n\n`;
      this.latest = { at: snapshot.at, frame };
      this.broadcast(frame);
    } catch (error) {
      const message = (error as Error).message;
      this.logger.warn(`dashboard snapshot failed: ${message}`);
      this.broadcast(
        `event: unavailable\ndata: ${JSON.stringify({ at: Date.now(), message: 'The sales could not be read (MySQL)' })}\n\n`,
      );
    } finally {
      this.building = false;
    }
  }

  /**
   * This second's snapshot: built here when this instance takes the second's build key (or
   * Redis cannot say), else the one another instance stored, unless that one is stale.
   */
  private async snapshotJson(): Promise<{ at: number; json: string } | null> {
    const now = Date.now();
    const claimed = await this.store
      .claimBuild(Math.floor(now / 1000), SHARED_TTL_MS)
      .catch(() => true);
    if (!claimed) {
      const stored = await this.store.sharedSnapshot().catch(() => null);
      const at = Number(/^\{"at":(\d+)/.exec(stored ?? '')?.[1] ?? 0);
      if (stored !== null && now - at < SHARED_STALE_MS) return { at, json: stored };
    }
    const snapshot = await this.board.build(now);
    const json = JSON.stringify(snapshot);
    await this.store.shareSnapshot(json, SHARED_TTL_MS).catch(() => undefined);
    return { at: snapshot.at, json };
  }

  private broadcast(frame: string): void {
    for (const feed of this.feeds.keys()) {
      if (feed.writableLength > MAX_BUFFERED_BYTES) {
        this.detach(feed);
        feed.destroy();
        continue;
      }
      // A client that is behind skips frames (each one is whole) until it has caught up.
      if (!feed.writableNeedDrain) this.write(feed, frame);
    }
  }

  /** Before the HTTP server closes (which waits for open responses): every feed is ended. */
  beforeApplicationShutdown(): void {
    this.closing = true;
    this.stop();
    for (const feed of [...this.feeds.keys()]) this.end(feed);
  }
}

function tooMany(message: string): DomainError {
  return new DomainError('TOO_MANY_REQUESTS', message, { retryAfterSeconds: 5 });
}
