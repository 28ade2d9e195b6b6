// A seeded random source: the same seed draws the same numbers, so a chaos run's schedule and
// workload choices can be replayed from the seed alone.

/** mulberry32: small, fast and good enough to draw faults and buyers; not for secrets. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[Math.floor(this.next() * items.length)];
  }

  /** One of `items`, each as likely as its weight. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((sum, [, weight]) => sum + weight, 0);
    let draw = this.next() * total;
    for (const [item, weight] of items) {
      draw -= weight;
      if (draw < 0) return item;
    }
    return items[items.length - 1][0];
  }

  /**
   * An independent stream for one purpose (the schedule, the workload): what one draws never
   * shifts what the other does, so a change to the workload leaves a seed's schedule alone.
   */
  fork(purpose: string): Rng {
    let hash = this.state ^ 0x9e3779b9;
    for (const char of purpose) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
    return new Rng(hash >>> 0);
  }
}

/** A seed for a run that names none: printed first, so the run can be replayed. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
