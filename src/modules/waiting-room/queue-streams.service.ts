import { BeforeApplicationShutdown, Injectable, type MessageEvent } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { EventFeed, type FeedValues } from '../../common/http/event-feed.js';
import { StreamBudget } from '../../infra/redis/stream-budget.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { StreamSlotsService } from '../../infra/redis/stream-slots.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ResultEventsService } from '../sale-store/result-events.service.js';
import type { QueueStanding } from './queue.scripts.js';
import { DrawEntryService, entryStatusOf, type EntryStatus } from './draw-entry.service.js';
import type { DrawSale, QueueSale } from './room-sale.js';
import { RoomWatcherService, type RoomView } from './room-watcher.service.js';
import { queueStatusOf, WaitingRoomService, type QueueStatus } from './waiting-room.service.js';

/** A queue feed's values: the status JSON, its fields in one order; a final status ends it. */
const QUEUE_VALUES: FeedValues<QueueStatus> = {
  data: ({ state, position, ahead, etaSeconds, admittedUntil, final }) =>
    JSON.stringify({ state, position, ahead, etaSeconds, admittedUntil, final }),
  isFinal: (status) => status.final,
};

/** An entry feed's values (a draw sale's), the same way. */
const ENTRY_VALUES: FeedValues<EntryStatus> = {
  data: ({ state, rank, ahead, rightUntil, final }) =>
    JSON.stringify({ state, rank, ahead, rightUntil, final }),
  isFinal: (status) => status.final,
};

/** How one kind of standing is told: exactly (its own read) and from a room read (none). */
interface StandingView<T> {
  values: FeedValues<T>;
  answer(standing: QueueStanding): Promise<T>;
  present(standing: QueueStanding, unitsMayReturn: boolean): T;
}

/** A stream follows a buyer SOLD_OUT for now by its place: its reads work the place out. */
const FOLLOWED = { place: true } as const;

/**
 * One buyer's standing, kept up from the shared room reads: a buyer's place in the line is fixed
 * once the shuffle placed it, so its position, and whether it is still in line when the stock
 * goes or comes back, is worked out from each read of the room with no query of its own. Its own
 * status is read again only at a turn: the shuffle done, its place reached, its admission over,
 * the stock gone while it was admitted, the sale's end while it was admitted, or an event on its
 * result channel (its join, its purchase, a release, its order written).
 */
class QueueFollower<T> {
  private standing: QueueStanding;

  constructor(
    initial: QueueStanding,
    private readonly feed: EventFeed<T>,
    private readonly view: StandingView<T>,
  ) {
    this.standing = initial;
  }

  /** The exact standing, read from Redis (the feed's read), as answered. */
  update(standing: QueueStanding): Promise<T> {
    this.standing = standing;
    return this.view.answer(standing);
  }

  roomRead(room: RoomView): void {
    // Being restored: what the stream said may no longer be true. It ends; the page reconnects
    // and is told 503 with Retry-After until the room is back, then the truth.
    if (room.restoring) return this.feed.end();
    const { state, ahead, head } = this.standing;
    const place = ahead === null ? null : head + ahead;
    const inLine = (state === 'WAITING' || state === 'SOLD_OUT') && place !== null;
    if (room.ended) {
      // Every standing is final at the end: one still in line (or never in it) is told so with
      // no read; an admitted one may have bought: read.
      if (state === 'NOT_JOINED' || inLine) {
        return this.tell(room, { state: inLine ? 'SOLD_OUT' : state, ended: true });
      }
      if (state === 'WAITING' || state === 'ADMITTED' || state === 'SOLD_OUT') {
        return this.feed.changed();
      }
      return;
    }
    if (state === 'ADMITTED') {
      const { admittedUntil } = this.standing;
      if (room.soldOut || (admittedUntil !== null && Date.now() >= admittedUntil)) {
        this.feed.changed();
      }
      return;
    }
    if (state !== 'WAITING' && state !== 'SOLD_OUT') return;
    if (!room.shuffled) return this.tell(room, {});
    // Reached (admitted, or past while sold out) or never placed: its own status says which.
    if (place === null || place < room.head) return this.feed.changed();
    // Still in line: sold out for now (or for good), or waiting again once a unit came back.
    this.tell(room, {
      state: room.soldOut ? 'SOLD_OUT' : 'WAITING',
      ahead: place - room.head,
      head: room.head,
    });
  }

  /** Pushes the standing changed by `change`, with the room's clock, stock and outlook. */
  private tell(room: RoomView, change: Partial<QueueStanding>): void {
    this.standing = {
      ...this.standing,
      admittedLast10s: room.admittedLast10s,
      stopped: room.stopped,
      stock: room.stock,
      deciding: room.deciding,
      ...change,
    };
    this.feed.push(this.view.present(this.standing, room.unitsMayReturn));
  }
}

/**
 * GET /api/v1/seckill/:goodsId/queue/stream: the queue status at once and at each change, ending
 * after a final one (`final`: a sold-out-for-now buyer stays in line, its stream open). Bounded like the result stream, on budgets of its own (QUEUE_STREAM_*):
 * per user and per client address across instances, per instance here. While open it costs no
 * query of its own but at a turn (QueueFollower); the room is read once per instance and
 * interval for all of a goods' streams (RoomWatcherService).
 */
@Injectable()
export class QueueStreamsService implements BeforeApplicationShutdown {
  private readonly budget: StreamBudget;

  constructor(
    private readonly room: WaitingRoomService,
    private readonly entries: DrawEntryService,
    private readonly watcher: RoomWatcherService,
    private readonly events: ResultEventsService,
    slots: StreamSlotsService,
    metrics: MetricsService,
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
  ) {
    this.budget = new StreamBudget('queue', slots, config.stream, metrics.queueStreams);
  }

  /** GET …/queue/stream: a queue sale's. */
  async open(
    goodsId: number,
    userId: number,
    clientAddress: string | null,
    ended: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const sale = await this.room.queueSale(goodsId);
    const view: StandingView<QueueStatus> = {
      values: QUEUE_VALUES,
      answer: (standing) => this.room.answer(sale, standing),
      present: (standing, unitsMayReturn) =>
        queueStatusOf(sale, standing, Date.now(), {
          stockFactor: this.config.admitStockFactor,
          unitsMayReturn,
        }),
    };
    return this.follow(sale, userId, clientAddress, ended, view);
  }

  /** GET …/entry/stream: a draw sale's entry, the same way (the rank is its place). */
  async openEntry(
    goodsId: number,
    userId: number,
    clientAddress: string | null,
    ended: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const sale = await this.entries.drawSale(goodsId);
    const view: StandingView<EntryStatus> = {
      values: ENTRY_VALUES,
      answer: (standing) => this.entries.answer(sale, standing),
      present: entryStatusOf,
    };
    return this.follow(sale, userId, clientAddress, ended, view);
  }

  private follow<T>(
    sale: QueueSale | DrawSale,
    userId: number,
    clientAddress: string | null,
    ended: AbortSignal,
    view: StandingView<T>,
  ): Promise<Observable<MessageEvent>> {
    return this.budget.open(userId, clientAddress, ended, async (teardown) => {
      const follower: { current?: QueueFollower<T> } = {};
      const feed = new EventFeed<T>(
        async () => follower.current!.update(await this.room.standing(sale, userId, FOLLOWED)),
        view.values,
        this.config.stream,
        this.budget.enders,
      );
      teardown.add(await this.events.watch(sale.id, userId, () => feed.changed()));
      // After the watch: a join or a purchase from here on is heard, none falls in between.
      const initial = await this.room.standing(sale, userId, FOLLOWED);
      const current = new QueueFollower(initial, feed, view);
      follower.current = current;
      const first = await view.answer(initial);
      teardown.add(this.watcher.watch(sale, (room) => current.roomRead(room)));
      return feed.events(first);
    });
  }

  beforeApplicationShutdown(): void {
    this.budget.endAll();
  }
}
