import { pseudonymsOf } from '../queue-journal/fairness.js';
import { PreQueueDigest } from './pre-queue-digest.js';
import type { PreQueuePage } from './queue.scripts.js';

/** Reads a page of the pre-queue from a join index on (QueueScripts.preRead). */
export type PreQueueReader = (from: number, limit: number) => Promise<PreQueuePage>;

/** Joins read in one page. */
const PAGE = 5_000;

/**
 * One sale's pre-queue followed as it grows, for the draw: each join read from Redis, in join-index
 * order, is hashed into the digest (its leaf holds the buyer's pseudonym, not its id) and kept as
 * pending until MySQL is found to hold it (RoomDrawService checks), so that at the start only the
 * last joins remain to be read and the journal is known to hold the very pre-queue the digest is
 * of. A room written anew by a restore (another `opened`) is followed again from its first join.
 */
export class PreQueueFollower {
  private readonly digest = new PreQueueDigest();
  private opened: string | undefined;
  /** Joins read but not yet found in MySQL, by join index. */
  readonly pending = new Map<number, number>();

  constructor(private readonly pseudonymKey: Buffer) {}

  /**
   * Reads what joined since the last call, `budget` joins at most. Returns the last page read
   * (its `journal` false: the room is being restored, nothing was read), or `stale` when the room
   * was written anew since this follower began: the caller follows it again with a new one.
   */
  async follow(
    read: PreQueueReader,
    budget = Number.POSITIVE_INFINITY,
  ): Promise<PreQueuePage | 'stale'> {
    let taken = 0;
    for (;;) {
      const page = await read(this.digest.lastIndex() + 1, Math.min(PAGE, budget - taken));
      if (!page.journal) return page;
      if (this.opened === undefined) this.opened = page.opened;
      else if (page.opened !== this.opened) return 'stale';
      const pseudonyms = pseudonymsOf(
        this.pseudonymKey,
        page.joins.map(({ userId }) => userId),
      );
      this.digest.addAll(page.joins.map(({ index }, i) => ({ index, pseudonym: pseudonyms[i] })));
      for (const { index, userId } of page.joins) this.pending.set(index, userId);
      taken += page.joins.length;
      if (page.joins.length < PAGE || taken >= budget) return page;
    }
  }

  /** The digest of the joins read so far (more may be read after). */
  digestSoFar(): string {
    return this.digest.digest();
  }

  /** The joins read so far. */
  size(): number {
    return this.digest.size();
  }

  /** The next join index to read. */
  nextIndex(): number {
    return this.digest.lastIndex() + 1;
  }
}
