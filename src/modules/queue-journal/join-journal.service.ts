import { Injectable, Logger } from '@nestjs/common';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { QueueJournalRepository, type JoinRow } from './queue-journal.repository.js';

/** Joins written in one statement at most: one round trip for a crowd's burst. */
const MAX_BATCH = 500;
/** How long a join waits for others to share its statement. */
const BATCH_MS = 2;
/** Statements on their way at once (the pool has more connections for the rest). */
const MAX_WRITES = 8;
/**
 * A join not written by then is answered 503 (the buyer joins again and keeps the place). Well
 * inside the restore's wait after a restart (PUBLISH_CONFIRM_TIMEOUT_MS), so that a join placed
 * on the lost Redis is written, or answered 503, before the restore reads the joins.
 */
export const WRITE_TIMEOUT_MS = 5_000;

interface Waiting {
  row: JoinRow;
  settle: (error?: Error) => void;
}

/**
 * Every join is in MySQL before it is answered (the waiting room's durability): joins arriving
 * together share one INSERT, then one read of what was kept confirms each buyer's place. A place
 * MySQL holds for another buyer (Redis lost joins that MySQL has: the restore will bring them
 * back) is answered 503, and so is a write that fails or takes too long: nothing is promised that
 * MySQL does not hold.
 */
@Injectable()
export class JoinJournalService {
  private readonly logger = new Logger(JoinJournalService.name);
  private queue: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writes = 0;

  constructor(private readonly repository: QueueJournalRepository) {}

  /** Resolves once the join is in MySQL at this place; throws UnavailableError otherwise. */
  record(row: JoinRow): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timeout = setTimeout(
        () =>
          settle(
            new UnavailableError('The join could not be written in time; join again', undefined, {
              retryAfterSeconds: 1,
            }),
          ),
        WRITE_TIMEOUT_MS,
      );
      let settled = false;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timeout);
        if (error) reject(error);
        else resolve();
      };
      this.queue.push({ row, settle });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.writes >= MAX_WRITES || this.queue.length === 0) return;
    if (this.queue.length >= MAX_BATCH) {
      this.flush();
      return;
    }
    this.timer ??= setTimeout(() => this.flush(), BATCH_MS);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writes >= MAX_WRITES || this.queue.length === 0) return;
    const batch = this.queue.splice(0, MAX_BATCH);
    this.writes++;
    void this.write(batch).finally(() => {
      this.writes--;
      this.schedule();
    });
  }

  private async write(batch: Waiting[]): Promise<void> {
    try {
      await this.repository.insertJoins(batch.map((waiting) => waiting.row));
      const kept = await this.repository.joinsOf(batch.map((waiting) => waiting.row));
      for (const { row, settle } of batch) {
        const held = kept.get(`${row.goodsId}:${row.userId}`);
        if (held && held.line === row.line && held.position === row.position) {
          settle();
          continue;
        }
        this.logger.warn(
          `queue join not kept: goods=${row.goodsId} user=${row.userId} line=${row.line} position=${row.position} kept=${held ? `${held.line}:${held.position}` : 'none'}`,
        );
        settle(
          new UnavailableError(
            'The waiting room is being restored; join again in a moment',
            undefined,
            { retryAfterSeconds: 1 },
          ),
        );
      }
    } catch (error) {
      const unavailable = new UnavailableError('MySQL did not take the join; join again', error, {
        retryAfterSeconds: 1,
      });
      for (const { settle } of batch) settle(unavailable);
    }
  }
}
