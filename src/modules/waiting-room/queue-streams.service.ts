import { BeforeApplicationShutdown, Injectable, type MessageEvent } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { orUnavailable } from '../../common/errors/domain-error.js';
import { EventFeed, type FeedValues } from '../../common/http/event-feed.js';
import { StreamBudget } from '../../common/http/stream-budget.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { StreamSlots } from '../../infra/redis/stream-slots.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ResultEvents } from '../sale-store/result-events.js';
import { QueueScripts, type QueueStanding, type RoomState } from './queue-scripts.js';
import { RoomWatcher } from './room-watcher.js';
import {
  queueStatusOf,
  WaitingRoom,
  type QueueSale,
  type QueueStatus,
} from './waiting-room.service.js';

const FINAL_STATES: ReadonlySet<string> = new Set(['PURCHASED', 'SOLD_OUT', 'EXPIRED']);

/** A queue feed's values: the status JSON, its fields in one order; a final state ends it. */
const QUEUE_VALUES: FeedValues<QueueStatus> = {
  data: ({ state, position, ahead, etaSeconds, admittedUntil }) =>
    JSON.stringify({ state, position, ahead, etaSeconds, admittedUntil }),
  isFinal: (status) => FINAL_STATES.has(status.state),
};

/**
 * One buyer's standing, kept up from the shared room reads: a WAITING buyer's place in the line
 * is fixed once the shuffle placed it, so its position is worked out from each read of the
 * room's head, with no query of its own. Its own status is read again only at a turn: the
 * shuffle done, its place reached, its admission over, the stock gone, or an event on its result
 * channel (its join, its purchase, a release).
 */
class QueueFollower {
  private standing: QueueStanding;

  constructor(
    private readonly sale: QueueSale,
    initial: QueueStanding,
    private readonly feed: EventFeed<QueueStatus>,
  ) {
    this.standing = initial;
  }

  /** The exact standing, read from Redis (the feed's read). */
  update(standing: QueueStanding): QueueStatus {
    this.standing = standing;
    return queueStatusOf(this.sale, standing, Date.now());
  }

  roomRead(room: RoomState): void {
    const { state, ahead, head, admittedUntil } = this.standing;
    if (state !== 'WAITING' && state !== 'ADMITTED') return;
    const soldOut = room.stock !== null && room.stock <= 0 && room.inflight === 0;
    const place = ahead === null ? null : head + ahead;
    if (soldOut) {
      // A buyer still in line cannot have bought nor lapsed: SOLD_OUT without a read, so that
      // the last unit costs no query per waiting stream. One admitted may have bought: read.
      if (state !== 'WAITING' || place === null || place < room.head) return this.feed.changed();
      this.standing = { ...this.standing, state: 'SOLD_OUT' };
      return this.feed.push(queueStatusOf(this.sale, this.standing, Date.now()));
    }
    if (state === 'ADMITTED') {
      if (admittedUntil !== null && Date.now() >= admittedUntil) this.feed.changed();
      return;
    }
    if (!room.shuffled) {
      this.feed.push(queueStatusOf(this.sale, this.standing, Date.now()));
      return;
    }
    if (place === null || place < room.head) return this.feed.changed();
    const moved = { ...this.standing, ahead: place - room.head, head: room.head };
    this.standing = { ...moved, admittedLast10s: room.admittedLast10s };
    this.feed.push(queueStatusOf(this.sale, this.standing, Date.now()));
  }
}

/**
 * GET /api/v1/seckill/:goodsId/queue/stream: the queue status at once and at each change, ending
 * after a final state. Bounded like the result stream, on budgets of its own (QUEUE_STREAM_*):
 * per user and per client address across instances, per instance here. While open it costs no
 * query of its own but at a turn (QueueFollower); the room is read once per instance and
 * interval for all of a goods' streams (RoomWatcher).
 */
@Injectable()
export class QueueStreams implements BeforeApplicationShutdown {
  private readonly budget: StreamBudget;

  constructor(
    private readonly room: WaitingRoom,
    private readonly scripts: QueueScripts,
    private readonly watcher: RoomWatcher,
    private readonly events: ResultEvents,
    slots: StreamSlots,
    metrics: MetricsService,
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
  ) {
    this.budget = new StreamBudget('queue', slots, config.stream, metrics.queueStreams);
  }

  async open(
    goodsId: number,
    userId: number,
    clientAddress: string | null,
    ended: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const sale = await this.room.queueSale(goodsId);
    return this.budget.open(userId, clientAddress, ended, async (teardown) => {
      const follower: { current?: QueueFollower } = {};
      const feed = new EventFeed<QueueStatus>(
        async () => follower.current!.update(await this.scripts.status(goodsId, userId)),
        QUEUE_VALUES,
        this.config.stream,
        this.budget.enders,
      );
      teardown.add(await this.events.watch(goodsId, userId, () => feed.changed()));
      // After the watch: a join or a purchase from here on is heard, none falls in between.
      const initial = await orUnavailable('Redis', () => this.scripts.status(goodsId, userId));
      const current = new QueueFollower(sale, initial, feed);
      follower.current = current;
      teardown.add(this.watcher.watch(goodsId, (room) => current.roomRead(room)));
      return feed.events(queueStatusOf(sale, initial, Date.now()));
    });
  }

  beforeApplicationShutdown(): void {
    this.budget.endAll();
  }
}
