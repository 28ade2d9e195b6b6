import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { DomainError, UnavailableError } from '../../common/errors/domain-error.js';
import { SaleBoard } from './sale-board.service.js';

/** Open feeds per instance; one more is refused 429 (each is an operator's browser tab). */
export const MAX_FEEDS = 16;
const TICK_MS = 1_000;
/** A comment line this often, so that proxies keep a feed open while snapshots fail. */
const HEARTBEAT_MS = 15_000;
/** A client this far behind (bytes it has not read) is cut off rather than buffered for. */
const MAX_BUFFERED_BYTES = 1 << 20;

/**
 * The admin event stream (`GET /api/v1/admin/events`). While at least one feed is open, this
 * instance builds one snapshot a second (SaleBoard), serialises it once and writes the same frame
 * to every open feed; with none open it does nothing. So the cost is one snapshot a second per
 * instance with a dashboard open, whatever the number of dashboards, and it stops with the last.
 */
@Injectable()
export class DashboardFeed implements BeforeApplicationShutdown {
  private readonly logger = new Logger(DashboardFeed.name);
  private readonly feeds = new Set<ServerResponse>();
  private ticker?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  private building = false;
  private closing = false;
  /** The latest frame and when it was built: a feed that opens gets it at once if fresh. */
  private latest?: { at: number; frame: string };

  constructor(private readonly board: SaleBoard) {}

  get openFeeds(): number {
    return this.feeds.size;
  }

  /** Takes the response over: a 200 event stream until the client goes or the app stops. */
  attach(reply: FastifyReply): void {
    if (this.closing) throw new UnavailableError('The server is shutting down');
    if (this.feeds.size >= MAX_FEEDS) {
      throw new DomainError('TOO_MANY_REQUESTS', 'Too many dashboard feeds open here', {
        retryAfterSeconds: 5,
      });
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
    feed.write(': seckill dashboard feed, one snapshot a second\n\n');
    this.feeds.add(feed);
    feed.on('close', () => this.detach(feed));
    if (this.latest && Date.now() - this.latest.at < TICK_MS) feed.write(this.latest.frame);
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
    this.feeds.delete(feed);
    if (this.feeds.size === 0) this.stop();
  }

  /** One snapshot for every open feed; a tick that finds the last one still building is skipped. */
  private async tick(): Promise<void> {
    if (this.building || this.feeds.size === 0) return;
    this.building = true;
    try {
      const snapshot = await this.board.build();
      const frame = `data: ${JSON.stringify(snapshot)}\n\n`;
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

  private broadcast(frame: string): void {
    for (const feed of this.feeds) {
      if (feed.writableLength > MAX_BUFFERED_BYTES) {
        feed.destroy();
        continue;
      }
      // A client that is behind skips frames (each one is whole) until it has caught up.
      if (!feed.writableNeedDrain) feed.write(frame);
    }
  }

  /** Before the HTTP server closes (which waits for open responses): every feed is ended. */
  beforeApplicationShutdown(): void {
    this.closing = true;
    this.stop();
    for (const feed of this.feeds) feed.end();
    this.feeds.clear();
  }
}
