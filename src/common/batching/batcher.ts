export interface BatcherOptions<T> {
  /** The most items a batch holds. */
  size: number;
  /**
   * How long an item that finds the handler idle waits for others to join it (a full batch
   * starts at once). Items that come in while a batch is being handled wait for it instead:
   * they start the next batch as soon as it is done.
   */
  waitMs: number;
  handle: (batch: T[]) => Promise<void>;
  /**
   * A batch whose handler failed; the batches after it run all the same. Its items are the
   * caller's to settle here (the order consumer gives their messages back): the batcher keeps none.
   */
  onError: (error: Error, batch: T[]) => void;
}

/**
 * Gathers items into batches and hands them to one handler, one batch after another: a
 * batch never starts before the previous one is done, so the handler never races itself.
 *
 * A batch takes what gathered while the previous one was being handled, so batches grow with
 * the load by themselves: one item at a time when it is quiet, full batches in a crowd, and
 * nothing waits on a timer once the handler is busy. (Fixed waits made a trade-off instead:
 * short ones cut the crowd's orders into many small transactions and the consumer fell behind;
 * long ones kept items waiting while the handler was idle.)
 */
export class Batcher<T> {
  private buffer: T[] = [];
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private drained?: { promise: Promise<void>; resolve: () => void };

  constructor(private readonly options: BatcherOptions<T>) {}

  push(item: T): void {
    this.buffer.push(item);
    if (this.running) return;
    if (this.buffer.length >= this.options.size) {
      // A timer even when full: items arriving in the same tick are not left alone behind it.
      this.schedule(0);
    } else if (!this.timer) {
      this.schedule(this.options.waitMs);
    }
  }

  /** Hands out what is buffered now, without waiting; resolves once all of it is handled. */
  drain(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.running) this.next();
    if (!this.running) return Promise.resolve();
    if (!this.drained) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.drained = { promise, resolve };
    }
    return this.drained.promise;
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.next();
    }, delayMs);
  }

  /** Starts a batch of what is buffered, if any; when it is done, the next one at once. */
  private next(): void {
    const batch = this.buffer.splice(0, this.options.size);
    if (batch.length === 0) {
      this.running = undefined;
      this.drained?.resolve();
      this.drained = undefined;
      return;
    }
    this.running = this.options
      .handle(batch)
      .catch((error: Error) => this.options.onError(error, batch))
      .then(() => this.next());
  }
}
