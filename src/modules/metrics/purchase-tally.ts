/** One second's purchase answers on this instance: goods id → outcome → count. */
export interface TallySecond {
  /** Unix time in whole seconds (this instance's clock). */
  second: number;
  counts: Map<number, Map<string, number>>;
}

/** Seconds kept when nobody takes them (the flusher is failing): older ones are dropped. */
const MAX_PENDING_SECONDS = 120;
/** Distinct goods counted in one second; a flood of made-up goods ids cannot grow it further. */
const MAX_GOODS_PER_SECOND = 1_000;

/**
 * Counts this instance's purchase answers per goods, outcome and second, in memory: the purchase
 * path pays a clock read and two map updates, never a store write. The dashboard's flusher takes
 * the seconds that are over once a second and adds them to the sale's figures in Redis, where the
 * counts of every instance meet (src/modules/dashboard/rate-recorder.service.ts).
 */
export class PurchaseTally {
  private second = 0;
  private current = new Map<number, Map<string, number>>();
  private readonly over: TallySecond[] = [];

  add(goodsId: number, outcome: string, now = Date.now()): void {
    const second = Math.floor(now / 1000);
    if (second !== this.second) this.roll(second);
    let byOutcome = this.current.get(goodsId);
    if (byOutcome === undefined) {
      if (this.current.size >= MAX_GOODS_PER_SECOND) return;
      byOutcome = new Map();
      this.current.set(goodsId, byOutcome);
    }
    byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
  }

  /** The seconds that are over (before `now`'s), oldest first; they are forgotten here. */
  takeCompleted(now = Date.now()): TallySecond[] {
    const second = Math.floor(now / 1000);
    if (second !== this.second) this.roll(second);
    return this.over.splice(0, this.over.length);
  }

  private roll(second: number): void {
    if (this.current.size > 0) {
      this.over.push({ second: this.second, counts: this.current });
      if (this.over.length > MAX_PENDING_SECONDS) this.over.shift();
      this.current = new Map();
    }
    this.second = second;
  }
}
