import type { MessageEvent } from '@nestjs/common';
import { Observable } from 'rxjs';

/** How a feed's values are told apart and when one ends it. */
export interface FeedValues<T> {
  /** The event's data; a value whose data equals the last one sent is not sent again. */
  data(value: T): string;
  isFinal(value: T): boolean;
}

export interface FeedTimings {
  /** A comment line this often keeps proxies from closing a quiet stream. */
  heartbeatMs: number;
  /** The stream ends after this; the client reconnects. */
  lifetimeMs: number;
}

/**
 * One event stream's values as they change: the current one at once, then each different one
 * (re-read when told it may have changed, one read at a time, or pushed when known without a
 * read), ending after a final one, at the stream's lifetime, or when an ender in `enders` is
 * called (the instance shutting down). Every `heartbeatMs` a comment keeps the connection open.
 */
export class EventFeed<T> {
  private sent?: string;
  private emit?: (value: T) => void;
  private finish?: () => void;
  private changedBeforeSubscribe = false;
  private reading = false;
  private readAgain = false;

  constructor(
    private readonly read: () => Promise<T | null>,
    private readonly values: FeedValues<T>,
    private readonly timings: FeedTimings,
    private readonly enders: Set<() => void>,
  ) {}

  /** The value may have changed: read it again. */
  changed(): void {
    if (this.emit) void this.reread();
    else this.changedBeforeSubscribe = true;
  }

  /**
   * Ends the stream now, without a final value: what it last said may no longer be true (the
   * client reconnects and reads anew).
   */
  end(): void {
    this.finish?.();
  }

  /** A value known without a read; dropped while a read is on its way (it may be newer). */
  push(value: T): void {
    if (!this.reading) this.emit?.(value);
  }

  events(initial: T): Observable<MessageEvent> {
    return new Observable<MessageEvent>((subscriber) => {
      const end = () => subscriber.complete();
      this.finish = end;
      this.emit = (value) => {
        const data = this.values.data(value);
        if (data === this.sent) return;
        this.sent = data;
        subscriber.next({ data });
        if (this.values.isFinal(value)) end();
      };
      this.emit(initial);
      if (subscriber.closed) return;
      const heartbeat = setInterval(
        () => subscriber.next({ comment: 'heartbeat' }),
        this.timings.heartbeatMs,
      );
      const lifetime = setTimeout(end, this.timings.lifetimeMs);
      this.enders.add(end);
      // A change heard while the first value was being read: that read may predate it.
      if (this.changedBeforeSubscribe) void this.reread();
      return () => {
        this.emit = undefined;
        this.finish = undefined;
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
        const live = await this.read().catch(() => null);
        if (live && this.emit) this.emit(live);
      } while (this.readAgain && this.emit);
    } finally {
      this.reading = false;
    }
  }
}
