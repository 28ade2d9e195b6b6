import type { FastifyReply } from 'fastify';
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DomainError } from '../../common/errors/domain-error.js';
import {
  DashboardFeedService,
  FEED_LIFETIME_MS,
  MAX_FEEDS_PER_ADMIN,
  STALLED_FEED_MS,
} from './dashboard-feed.service.js';
import type { DashboardStore } from './dashboard.store.js';
import type { SaleBoardService } from './sale-board.service.js';

/** A response whose client reads (writes succeed) until told to stop. */
class FakeResponse extends EventEmitter {
  reading = true;
  writableNeedDrain = false;
  writableLength = 0;
  writableFinished = false;
  ended = false;
  destroyed = false;
  readonly socket = { setNoDelay: () => undefined };

  writeHead(): this {
    return this;
  }

  write(): boolean {
    if (!this.reading) this.writableNeedDrain = true;
    return this.reading;
  }

  end(): void {
    this.ended = true;
    if (this.reading) this.writableFinished = true;
  }

  destroy(): void {
    this.destroyed = true;
  }

  /** The client reads again: what waited is written. */
  drain(): void {
    this.reading = true;
    this.writableNeedDrain = false;
    this.emit('drain');
  }
}

describe('DashboardFeedService', () => {
  let feed: DashboardFeedService;

  const attach = (admin: number) => {
    const response = new FakeResponse();
    feed.attach({ hijack: () => undefined, raw: response } as unknown as FastifyReply, admin);
    return response;
  };

  beforeEach(() => {
    vi.useFakeTimers();
    const board = { build: async (at: number) => ({ at, sales: [], queues: [], problems: [] }) };
    const store = { claimBuild: async () => true, sharedSnapshot: async () => null };
    feed = new DashboardFeedService(
      board as unknown as SaleBoardService,
      store as unknown as DashboardStore,
    );
  });

  afterEach(() => {
    feed.beforeApplicationShutdown();
    vi.useRealTimers();
  });

  it(`should refuse an admin's feed beyond ${MAX_FEEDS_PER_ADMIN} with 429, not another admin's`, () => {
    for (let i = 0; i < MAX_FEEDS_PER_ADMIN; i++) attach(1);

    expect(() => attach(1)).toThrow(DomainError);
    expect(() => attach(1)).toThrow(/dashboard feeds open/);
    attach(2);
    expect(feed.openFeeds).toBe(MAX_FEEDS_PER_ADMIN + 1);
  });

  it('should cut a feed whose socket stays full for STALLED_FEED_MS and free its slot', async () => {
    const stalled = attach(1);
    const reading = attach(1);
    stalled.reading = false;

    await vi.advanceTimersByTimeAsync(STALLED_FEED_MS - 1_000);
    expect(stalled.destroyed).toBe(false);
    await vi.advanceTimersByTimeAsync(2_000);

    expect(stalled.destroyed).toBe(true);
    expect(reading.destroyed).toBe(false);
    expect(feed.openFeeds).toBe(1);
  });

  it('should keep a feed whose client catches up before STALLED_FEED_MS', async () => {
    const slow = attach(1);
    slow.reading = false;
    await vi.advanceTimersByTimeAsync(STALLED_FEED_MS - 2_000);
    slow.drain();
    await vi.advanceTimersByTimeAsync(STALLED_FEED_MS);

    expect(slow.destroyed).toBe(false);
    expect(feed.openFeeds).toBe(1);
  });

  it('should end a feed at its lifetime, freeing its slot at once, and cut it if the end is never read', async () => {
    const reads = attach(1);
    const never = attach(2);
    // Its client stops reading a second before the lifetime: too late for the stall's cut.
    await vi.advanceTimersByTimeAsync(FEED_LIFETIME_MS - 1_000);
    never.reading = false;
    await vi.advanceTimersByTimeAsync(1_000);

    expect(reads.ended && never.ended).toBe(true);
    expect(feed.openFeeds).toBe(0);
    expect(reads.destroyed).toBe(false);
    await vi.advanceTimersByTimeAsync(STALLED_FEED_MS);
    expect(never.destroyed).toBe(true);
    expect(reads.destroyed).toBe(false);
  });
});
