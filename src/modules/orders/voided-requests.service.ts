import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter, isTransientDbError } from '../../common/database/transient-errors.js';
import { TransactionsService, type Tx } from '../../infra/database/transactions.service.js';
import { VOIDED_RETENTION_MS } from '../sale-store/outbox-reader.store.js';
import { OrderRepository } from './order.repository.js';
import { VoidedRequestRepository } from './voided-request.repository.js';

/** Tries of a void whose transaction InnoDB chose as a deadlock's victim (or timed out a wait). */
const MAX_RECORD_ATTEMPTS = 5;
/** Rows one prune statement deletes: a short transaction, whatever the backlog. */
const PRUNE_BATCH = 1_000;

/**
 * The purchases answered 503 "nothing was taken" although their message may still reach a
 * consumer (the broker did not confirm the publish), and those a consumer gave up (their message
 * exhausted its deliveries) while another copy of them may still be written by a consumer whose
 * claim lapsed unseen (OrderIngestService), kept in MySQL (`seckill_voided_request`).
 * Redis's record of the void (its `voided` set) is lost when Redis restarts empty and is not read
 * while consumers write without Redis (REDIS_DOWN_MODE=database); this one is read by every write.
 *
 * "An order written" and "a void recorded" exclude each other per request id, in MySQL itself:
 * each side first writes its own row, then reads the other's row with a locking read, in one
 * transaction (`record` here; OrderWriterService inserts the batch's orders, then `voidedAmong`).
 * A locking read sees the latest committed row and waits for an uncommitted one. So:
 * - the order commits first: the void's read finds it, the void rolls back (it is an order);
 * - the void commits first: the writer's read finds it, the batch rolls back and is written
 *   again without that purchase (voided);
 * - both rows are written before either read: each read waits for the other's row, InnoDB sees
 *   the deadlock and rolls one transaction back (ER_LOCK_DEADLOCK, retried by both sides); the
 *   other commits, and the retry is one of the two cases above.
 * Only row locks are relied on, not gap locks, so this holds under READ COMMITTED as well as
 * REPEATABLE READ (checked on MariaDB 10.11 with both; `LOCK IN SHARE MODE` is MySQL 8's too).
 * Under REPEATABLE READ the reads also take gap locks, which make an insert into the gap wait
 * for the reader's commit (milliseconds): no cycle, as each side only commits after its read.
 */
@Injectable()
export class VoidedRequestsService {
  private readonly logger = new Logger(VoidedRequestsService.name);

  constructor(
    private readonly transactions: TransactionsService,
    private readonly voids: VoidedRequestRepository,
    private readonly orders: OrderRepository,
  ) {}

  /**
   * Records the void unless the purchase is an order already. `voided`: committed, no order can
   * be written for this request from now on. `ordered`: an order holds it, nothing recorded.
   * Throws when MySQL could not be asked (the outcome is then not settled). Recording a void
   * that is there already answers `voided`: a void row is only ever committed with no order
   * beside it, so a caller retrying after a later step failed (its Redis release) finds it.
   */
  async record(requestId: string, goodsId: number): Promise<'voided' | 'ordered'> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transactions.run(async (tx) => {
          if (!(await this.voids.insert(tx, requestId, goodsId))) return 'voided' as const;
          if (!(await this.orders.hasOrderLocked(tx, requestId))) return 'voided' as const;
          throw new Ordered();
        });
      } catch (error) {
        if (error instanceof Ordered) return 'ordered';
        if (!isTransientDbError(error) || attempt >= MAX_RECORD_ATTEMPTS) throw error;
        await sleep(backoffWithJitter(attempt, 5, 100));
      }
    }
  }

  /**
   * Within the writer's transaction, after it inserted the orders of `requestIds`: those that
   * are voided (see the class comment for why the read comes after the insert).
   */
  async voidedAmong(tx: Tx, requestIds: string[]): Promise<Set<string>> {
    if (requestIds.length === 0) return new Set();
    return this.voids.voidedAmongLocked(tx, requestIds);
  }

  /**
   * Deletes the voids older than `retentionMs` (MySQL's clock), in batches; returns how many. The
   * retention is Redis's for its voided set: far beyond any message's life in the queue.
   */
  async prune(retentionMs = VOIDED_RETENTION_MS): Promise<number> {
    let pruned = 0;
    for (;;) {
      const deleted = await this.voids.deleteOlderThan(retentionMs, PRUNE_BATCH);
      pruned += deleted;
      if (deleted < PRUNE_BATCH) break;
    }
    if (pruned > 0) this.logger.log(`voided requests pruned: n=${pruned}`);
    return pruned;
  }
}

/** The purchase's order exists: the void's transaction rolls back. */
class Ordered extends Error {}
