export interface BatcherOptions<T> {
  /** A batch is handed out as soon as it holds this many items... */
  size: number;
  /** ...or this long after its first item came in, whichever comes first. */
  waitMs: number;
  handle: (batch: T[]) => Promise<void>;
  /** A batch whose handler failed; the batches after it run all the same. */
  onError: (error: Error, batch: T[]) => void;
}

/**
 * Gathers items into batches and hands them to one handler, one batch after another: a
 * batch never starts before the previous one is done, so the handler never races itself.
 */
export class Batcher<T> {
  private buffer: T[] = [];
  private timer?: NodeJS.Timeout;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly options: BatcherOptions<T>) {}

  push(item: T): void {
    this.buffer.push(item);
    if (this.buffer.length >= this.options.size) {
      this.schedule(0);
    } else if (!this.timer) {
      this.schedule(this.options.waitMs);
    }
  }

  /** Hands out what is buffered now; resolves once every batch handed out so far is done. */
  drain(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
    return this.chain;
  }

  // A timer even when full: items arriving in the same tick still join the batch.
  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, delayMs);
  }

  private flush(): void {
    const batch = this.buffer.splice(0, this.buffer.length);
    if (batch.length === 0) return;
    this.chain = this.chain
      .then(() => this.options.handle(batch))
      .catch((error: Error) => this.options.onError(error, batch));
  }
}
