import { Injectable, Logger } from '@nestjs/common';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { randomHex } from '../../common/random/random-hex.js';
import { SaleStateLockService, type SaleStateHold } from '../sale-store/sale-state-lock.service.js';
import { WRITE_TIMEOUT_MS } from './join-journal.service.js';
import { QueueJournalRepository, type JoinRow } from './queue-journal.repository.js';
import { QueueRestoreScripts } from './queue-restore.scripts.js';

/** Joins read from MySQL, and members written to Redis, per round trip. */
const PAGE = 5_000;

/**
 * Writes a queue sale's waiting room back into Redis from its MySQL journal (lua/queue-restore.lua):
 * every join at its place, the seed and the pre-queue's size it orders, how far admission went,
 * each admission (used where the buyer has an order, lapsed where its time had run out) and the
 * room's clock stopped where the journal last had it. While it runs the room is not the
 * journal's: joins, standings and streams answer 503 with Retry-After, admission waits.
 *
 * Run by a rebuild (PreheatService: Redis lost the sale or holds an older copy) and on demand,
 * where a route or the admission job finds the room not the journal's (a new room, or one Redis
 * lost without a restart being noticed). Always under the goods' sale-state lock.
 */
@Injectable()
export class QueueRestoreService {
  private readonly logger = new Logger(QueueRestoreService.name);
  private readonly running = new Map<number, Promise<void>>();

  constructor(
    private readonly journal: QueueJournalRepository,
    private readonly scripts: QueueRestoreScripts,
    private readonly saleLock: SaleStateLockService,
  ) {}

  /**
   * The room found not the journal's: restored under the lock, once per goods at a time on this
   * instance (every caller shares the one under way). Failures are logged; the next finding
   * tries again. `anew`: restored even though it is marked the journal's (it was found to
   * disagree with MySQL), which drops the mark first: every reader waits for the restore.
   */
  ensure(goodsId: number, { anew = false }: { anew?: boolean } = {}): Promise<void> {
    let run = this.running.get(goodsId);
    if (!run) {
      run = this.saleLock
        .hold(goodsId, 'queue-restore', async (held) => {
          // Read under the lock: another instance may have restored it meanwhile.
          if (anew) await this.restoreHeld(held);
          else await this.ensureHeld(held);
        })
        .catch((error: Error) => {
          // Waiting for the joins of the lost room is the usual first answer: not a warning.
          if (error instanceof UnavailableError) {
            this.logger.debug(`queue restore not done yet: goods=${goodsId} ${error.message}`);
          } else {
            this.logger.warn(`queue restore not done: goods=${goodsId} ${error.message}`);
          }
        })
        .finally(() => this.running.delete(goodsId));
      this.running.set(goodsId, run);
    }
    return run;
  }

  /** As `ensure`, for a caller that holds the goods' sale-state lock (the preheat). */
  async ensureHeld(held: SaleStateHold): Promise<void> {
    if (await this.scripts.isJournals(held.goodsId)) return;
    await this.restoreHeld(held);
  }

  /**
   * The restore itself, for a caller that holds the goods' sale-state lock. The joins are read
   * once every join placed on the room before it stopped taking them (Redis keeps when: the
   * drop, a rebuild's wipe, or the first finding of a room Redis lost) is written or refused.
   */
  async restoreHeld(held: SaleStateHold): Promise<void> {
    const goodsId = held.goodsId;
    const started = performance.now();
    const quietMs = await this.scripts.drop(goodsId);
    const room = await this.journal.room(goodsId);
    const firstPre = await this.journal.joins(goodsId, 0, -1, 1);
    const firstLine = await this.journal.joins(goodsId, 1, -1, 1);
    const waitMs = WRITE_TIMEOUT_MS + 100 - quietMs;
    if ((room || firstPre.length > 0 || firstLine.length > 0) && waitMs > 0) {
      // A join placed on the room before it was dropped (or lost) is written to MySQL, or
      // answered 503, within the journal's write timeout: the joins are read after it. Till
      // then the caller is told to come back (a rebuild is deferred, a route answers 503).
      const ms = waitMs;
      throw new UnavailableError(
        `Waiting ${ms} ms more for the joins placed on the lost waiting room to reach MySQL`,
        undefined,
        { retryAfterSeconds: Math.ceil(ms / 1000) },
      );
    }
    const kept = await this.journal.room(goodsId);
    const pre = await this.allJoins(goodsId, 0);
    const line = await this.allJoins(goodsId, 1);
    const preSeq = Math.max(
      pre.length === 0 ? 0 : pre[pre.length - 1].position + 1,
      kept?.preSize ?? 0,
    );
    const seq = line.length === 0 ? 0 : line[line.length - 1].position;
    // The seed is written back only with the pre-queue size its draw in Redis kept. One without
    // it was drawn in MySQL alone (the admission job asks for it a moment before the start) or
    // its draw never reached the journal: written back, it would close the pre-queue before the
    // start, and a buyer joining then would go behind the shuffle. The tick draws it again, the
    // same seed from MySQL, at the start.
    const drawn = kept?.seed && kept.preSize !== null ? kept : null;
    const token = randomHex(8);
    await this.scripts.begin(goodsId, {
      seed: drawn?.seed ?? '',
      preSize: drawn?.preSize ?? '',
      head: kept?.head ?? 0,
      preSeq,
      seq,
      roomMs: kept?.roomMs ?? '',
      token,
    });
    await this.writeMembers(goodsId, 'pre', pre);
    await this.writeMembers(goodsId, 'line', line);
    const accounts = new Map<string, number>();
    for (const { address } of [...pre, ...line]) {
      if (address !== null) accounts.set(address, (accounts.get(address) ?? 0) + 1);
    }
    const counted = [...accounts].flat();
    for (let from = 0; from < counted.length; from += 2 * PAGE) {
      await this.scripts.addresses(goodsId, counted.slice(from, from + 2 * PAGE));
    }
    const used = await this.journal.buyersWithOrders(goodsId);
    const admissions = await this.journal.admissions(goodsId);
    for (let from = 0; from < admissions.length; from += PAGE) {
      await this.scripts.admitted(
        goodsId,
        kept?.roomMs ?? '',
        admissions
          .slice(from, from + PAGE)
          .flatMap((a) => [a.userId, a.untilMs, used.has(a.userId) ? '1' : '0']),
      );
    }
    if (!(await this.scripts.open(goodsId, token))) {
      // Redis restarted (or another restore began) between its steps: the room holds part of
      // this one, never marked the journal's; the next call restores it whole.
      this.logger.warn(`queue restore cut short, to be done again: goods=${goodsId}`);
      throw new UnavailableError(
        'The waiting room is being restored; ask again after Retry-After',
        undefined,
        { retryAfterSeconds: 1 },
      );
    }
    this.logger.warn(
      `queue restored from mysql: goods=${goodsId} joins=${pre.length + line.length} admissions=${admissions.length} head=${kept?.head ?? 0} ms=${Math.round(performance.now() - started)}`,
    );
  }

  private async allJoins(goodsId: number, line: 0 | 1): Promise<JoinRow[]> {
    const rows: JoinRow[] = [];
    for (let after = -1; ;) {
      const page = await this.journal.joins(goodsId, line, after, PAGE);
      rows.push(...page);
      if (page.length < PAGE) return rows;
      after = page[page.length - 1].position;
    }
  }

  private async writeMembers(goodsId: number, step: 'pre' | 'line', rows: JoinRow[]) {
    for (let from = 0; from < rows.length; from += PAGE) {
      await this.scripts.members(
        goodsId,
        step,
        rows.slice(from, from + PAGE).flatMap((row) => [row.position, row.userId]),
      );
    }
  }
}
