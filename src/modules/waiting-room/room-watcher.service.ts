import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { QueueScripts, type RoomState } from './queue.scripts.js';
import { ReturnsOutlookService } from './returns-outlook.service.js';
import type { RoomSale } from './room-sale.js';

/** A read of the room, with what follows from it for every buyer still in line. */
export interface RoomView extends RoomState {
  /** No stock left and nothing on its way to MySQL, or the sale ended. */
  soldOut: boolean;
  /** Sold out before the end, and an unpaid order is left whose stock may come back. */
  unitsMayReturn: boolean;
}

interface Watch {
  listeners: Set<(room: RoomView) => void>;
  timer: NodeJS.Timeout;
  reading: boolean;
}

/**
 * A queue's room state (lua/queue-room.lua) read once per QUEUE_STREAM_POLL_MS per instance, for
 * every queue stream this instance serves of that goods, and only while it serves one: a
 * million waiting buyers on ten instances cost ten reads per interval, not a million.
 */
@Injectable()
export class RoomWatcherService implements OnModuleDestroy {
  private readonly watches = new Map<number, Watch>();

  constructor(
    private readonly scripts: QueueScripts,
    private readonly returns: ReturnsOutlookService,
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
  ) {}

  /** Calls `listener` with each read of the goods' room; the returned function stops it. */
  watch(sale: RoomSale, listener: (room: RoomView) => void): () => void {
    const goodsId = sale.id;
    let watch = this.watches.get(goodsId);
    if (!watch) {
      const created: Watch = {
        listeners: new Set(),
        timer: setInterval(() => void this.read(sale, created), this.config.stream.pollMs),
        reading: false,
      };
      created.timer.unref();
      this.watches.set(goodsId, created);
      watch = created;
    }
    const watched = watch;
    watched.listeners.add(listener);
    return () => {
      watched.listeners.delete(listener);
      if (watched.listeners.size > 0 || this.watches.get(goodsId) !== watched) return;
      clearInterval(watched.timer);
      this.watches.delete(goodsId);
    };
  }

  onModuleDestroy(): void {
    for (const watch of this.watches.values()) clearInterval(watch.timer);
    this.watches.clear();
  }

  private async read(sale: RoomSale, watch: Watch): Promise<void> {
    if (watch.reading) return;
    watch.reading = true;
    try {
      const room = await this.scripts.room(sale.id, sale.endAt.getTime());
      const soldOut = room.ended || (room.stock !== null && room.stock <= 0 && room.inflight === 0);
      // Unknown (MySQL not answering) counts as "may": a stream is never ended on a guess.
      const unitsMayReturn =
        soldOut && !room.ended ? await this.returns.mayReturn(sale.id).catch(() => true) : false;
      const view: RoomView = { ...room, soldOut, unitsMayReturn };
      for (const listener of [...watch.listeners]) listener(view);
    } catch {
      // Skipped: the next interval reads again, and a stream's own events still re-read.
    } finally {
      watch.reading = false;
    }
  }
}
