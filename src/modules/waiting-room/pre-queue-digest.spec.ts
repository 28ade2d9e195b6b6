import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';

import { leafOf, pseudonymOf } from '../queue-journal/fairness.js';
import { PreQueueDigest } from './pre-queue-digest.js';

const KEY = Buffer.alloc(32, 1);

describe('PreQueueDigest', () => {
  it('should digest the leaves in join-index order, and read the digest without ending it', () => {
    const digest = new PreQueueDigest();
    expect(digest.digest()).toBe(createHash('sha256').digest('hex'));
    digest.add(0, pseudonymOf(KEY, 7));
    const early = digest.digest();
    expect(early).toBe(
      createHash('sha256')
        .update(leafOf(0, pseudonymOf(KEY, 7)))
        .digest('hex'),
    );
    // Index 1 nobody holds: no leaf.
    digest.add(2, pseudonymOf(KEY, 9));
    expect(digest.digest()).toBe(
      createHash('sha256')
        .update(`0:${pseudonymOf(KEY, 7)}\n2:${pseudonymOf(KEY, 9)}\n`)
        .digest('hex'),
    );
    expect(digest.digest()).not.toBe(early);
    expect(digest.size()).toBe(2);
    expect(digest.lastIndex()).toBe(2);
  });

  it('should refuse a leaf out of join-index order, or an index that is not one', () => {
    const digest = new PreQueueDigest();
    digest.add(3, 'a');
    expect(() => digest.add(3, 'b')).toThrow(RangeError);
    expect(() => digest.add(2, 'b')).toThrow(RangeError);
    expect(() => digest.add(4.5, 'b')).toThrow(RangeError);
    expect(() =>
      digest.addAll([
        { index: 5, pseudonym: 'b' },
        { index: 5, pseudonym: 'c' },
      ]),
    ).toThrow(RangeError);
    // A page refused whole: nothing of it is added.
    expect(digest.size()).toBe(1);
    expect(digest.lastIndex()).toBe(3);
  });

  it('should digest a page added at once as its joins added one by one', () => {
    const one = new PreQueueDigest();
    const page = new PreQueueDigest();
    const joins = [0, 1, 4, 9].map((index) => ({ index, pseudonym: pseudonymOf(KEY, index + 70) }));
    for (const { index, pseudonym } of joins) one.add(index, pseudonym);
    page.addAll(joins.slice(0, 1));
    page.addAll(joins.slice(1));
    expect(page.digest()).toBe(one.digest());
    expect(page.size()).toBe(4);
  });
});
