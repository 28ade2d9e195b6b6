import { createHash, type Hash } from 'node:crypto';
import { leafOf } from '../queue-journal/fairness.js';

/**
 * The digest of a pre-queue built as its joins come, in join-index order (gaps allowed: an index
 * nobody holds adds no leaf), so that at the start only the joins since the last read remain to
 * be hashed. Reading it does not end it.
 */
export class PreQueueDigest {
  private readonly hash: Hash = createHash('sha256');
  private last = -1;
  private count = 0;

  /** The next join: its index must be above every one added before. */
  add(index: number, pseudonym: string): void {
    this.addAll([{ index, pseudonym }]);
  }

  /** The next joins, in index order: one update of the hash for the lot (a page of the reads). */
  addAll(joins: readonly { index: number; pseudonym: string }[]): void {
    let last = this.last;
    for (const { index } of joins) {
      if (!Number.isSafeInteger(index) || index <= last) {
        throw new RangeError(`join index ${index} after ${last}: the leaves go in index order`);
      }
      last = index;
    }
    this.hash.update(joins.map(({ index, pseudonym }) => leafOf(index, pseudonym)).join(''));
    this.last = last;
    this.count += joins.length;
  }

  /** The highest join index added (-1: none). */
  lastIndex(): number {
    return this.last;
  }

  /** The leaves added. */
  size(): number {
    return this.count;
  }

  /** The hex SHA-256 of the leaves so far (more may be added after). */
  digest(): string {
    return this.hash.copy().digest('hex');
  }
}
