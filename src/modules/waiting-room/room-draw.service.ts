import { Injectable, Logger } from '@nestjs/common';
import { DrawJournalService } from '../queue-journal/draw-journal.service.js';
import { JoinJournalService } from '../queue-journal/join-journal.service.js';
import type { DrawRow } from '../queue-journal/queue-journal.repository.js';
import { drawSeed } from '../queue-journal/fairness.js';
import { PreQueueFollower } from './pre-queue-follower.js';
import { QueueScripts } from './queue.scripts.js';
import { drawAtOf, type DrawSale, type QueueSale } from './room-sale.js';

/**
 * Joins read per admission step before the start (a page of 5,000 costs some 5 ms: the read, the
 * pseudonyms, the hash): a crowd joining faster than this is caught up at the start.
 */
const FOLLOW_BUDGET = 20_000;
/** Pending joins looked up in MySQL by one read. */
const CHECK_PAGE = 5_000;

/**
 * The draw of a queue sale's order, by commit-and-reveal (fairness.ts): the admission job follows
 * the pre-queue as it grows (PreQueueFollower: its digest, and each join checked in MySQL), and
 * at the start, once the pre-queue takes no more joins, the seed is drawn from the committed
 * secret and the digest of the whole pre-queue, and kept in MySQL before Redis takes it. MySQL
 * then holds exactly the pre-queue the digest is of (a join placed in Redis whose write had failed
 * is written now), so that the export an auditor gets recomputes the digest and the order.
 */
@Injectable()
export class RoomDrawService {
  private readonly logger = new Logger(RoomDrawService.name);
  private readonly followers = new Map<number, PreQueueFollower>();

  constructor(
    private readonly scripts: QueueScripts,
    private readonly draws: DrawJournalService,
    private readonly joins: JoinJournalService,
  ) {}

  /** Before the start: the joins since the last call into the digest, and checked in MySQL. */
  async follow(sale: QueueSale | DrawSale): Promise<void> {
    const page = await this.read(sale, FOLLOW_BUDGET);
    if (page === null) return;
    if (page.seeded) {
      this.followers.delete(sale.id);
      return;
    }
    await this.check(sale.id, false);
  }

  /**
   * Past the start, the room holding no seed: the draw for its pre-queue of `preSeq` joins,
   * kept in MySQL (or the one kept there already). Throws when the pre-queue cannot be read
   * whole, or MySQL and Redis disagree on it: nothing is drawn then, nobody admitted.
   */
  async draw(sale: QueueSale | DrawSale, preSeq: number): Promise<DrawRow> {
    const kept = await this.draws.drawn(sale.id);
    if (kept) {
      this.followers.delete(sale.id);
      return kept;
    }
    const page = await this.read(sale, Number.POSITIVE_INFINITY);
    if (page === null || !page.closed || page.preSeq !== preSeq) {
      throw new Error(
        `queue draw deferred: goods=${sale.id} the pre-queue is not closed at ${preSeq} joins`,
      );
    }
    await this.check(sale.id, true);
    const follower = this.followers.get(sale.id)!;
    const { secret } = await this.draws.secretsOf(sale.id);
    const digest = follower.digestSoFar();
    const draw = await this.draws.draw(sale.id, {
      seed: drawSeed(secret, digest),
      digest,
      preSize: preSeq,
    });
    this.followers.delete(sale.id);
    this.logger.log(
      `queue draw kept: goods=${sale.id} preSize=${draw.preSize} joins=${follower.size()} digest=${draw.digest}`,
    );
    return draw;
  }

  /** Follows the pre-queue on; null when the room is being restored (nothing read). */
  private async read(sale: QueueSale | DrawSale, budget: number) {
    let follower = await this.followerOf(sale.id);
    const read = (from: number, limit: number) =>
      this.scripts.preRead(sale.id, from, limit, drawAtOf(sale));
    let page = await follower.follow(read, budget);
    if (page === 'stale') {
      this.logger.warn(`queue pre-queue written anew, followed again: goods=${sale.id}`);
      this.followers.delete(sale.id);
      follower = await this.followerOf(sale.id);
      page = await follower.follow(read, budget);
      if (page === 'stale') return null;
    }
    return page.journal ? page : null;
  }

  private async followerOf(goodsId: number): Promise<PreQueueFollower> {
    let follower = this.followers.get(goodsId);
    if (!follower) {
      follower = new PreQueueFollower((await this.draws.secretsOf(goodsId)).pseudonymKey);
      this.followers.set(goodsId, follower);
    }
    return follower;
  }

  /**
   * The joins read and not yet found in MySQL, looked for there; `write`: the draw's, those still
   * missing (their write failed, or is on its way) written now. A join MySQL holds for another
   * buyer means the two stores disagree: no draw from it.
   */
  private async check(goodsId: number, write: boolean): Promise<void> {
    const follower = this.followers.get(goodsId);
    if (!follower || follower.pending.size === 0) return;
    const missing = await this.missing(goodsId, follower);
    if (!write || missing.length === 0) return;
    await Promise.all(
      missing.map(([index, userId]) =>
        this.joins.record({ goodsId, userId, line: 0, position: index, address: null }),
      ),
    );
    follower.pending.clear();
  }

  private async missing(goodsId: number, follower: PreQueueFollower): Promise<[number, number][]> {
    // The pending joins in index order (as read), looked up a page at a time.
    const pending = [...follower.pending];
    const missing: [number, number][] = [];
    for (let from = 0; from < pending.length; from += CHECK_PAGE) {
      const page = pending.slice(from, from + CHECK_PAGE);
      const held = await this.draws.preQueueAt(
        goodsId,
        page.map(([index]) => index),
      );
      for (const [index, userId] of page) {
        const holder = held.get(index);
        if (holder === userId) follower.pending.delete(index);
        else if (holder === undefined) missing.push([index, userId]);
        else {
          throw new Error(
            `queue pre-queue differs between Redis and MySQL: goods=${goodsId} index=${index} redis=${userId} mysql=${holder}`,
          );
        }
      }
    }
    return missing;
  }
}
