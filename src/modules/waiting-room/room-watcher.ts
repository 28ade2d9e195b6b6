import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { QueueScripts, type RoomState } from './queue-scripts.js';

interface Watch {
  listeners: Set<(room: RoomState) => void>;
  timer: NodeJS.Timeout;
  reading: boolean;
}

/**
 * A queue's room state (lua/queue-room.lua) read once per QUEUE_STREAM_POLL_MS per instance, for
 * every queue stream this instance serves of that goods, and only while it serves one: a
 * million waiting buyers on ten instances cost ten reads per interval, not a million.
 */
@Injectable()
export class RoomWatcher implements OnModuleDestroy {
  private readonly watches = new Map<number, Watch>();

  constructor(
    private readonly scripts: QueueScripts,
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
  ) {}

  /** Calls `listener` with each read of the goods' room; the returned function stops it. */
  watch(goodsId: number, listener: (room: RoomState) => void): () => void {
    let watch = this.watches.get(goodsId);
    if (!watch) {
      const created: Watch = {
        listeners: new Set(),
        timer: setInterval(() => void this.read(goodsId, created), this.config.stream.pollMs),
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

  private async read(goodsId: number, watch: Watch): Promise<void> {
    if (watch.reading) return;
    watch.reading = true;
    try {
      const room = await this.scripts.room(goodsId);
      for (const listener of [...watch.listeners]) listener(room);
    } catch {
      // Skipped: the next interval reads again, and a stream's own events still re-read.
    } finally {
      watch.reading = false;
    }
  }
}
