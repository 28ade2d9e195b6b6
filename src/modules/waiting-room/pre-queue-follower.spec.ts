import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';

import { pseudonymOf } from '../queue-journal/fairness.js';
import { PreQueueDigest } from './pre-queue-digest.js';
import { PreQueueFollower } from './pre-queue-follower.js';
import type { PreQueuePage } from './queue.scripts.js';

/** A pre-queue in memory, read as lua/queue-pre-read.lua reads it (index order, `limit` at most). */
class FakeRoom {
  joins: { index: number; userId: number }[] = [];
  opened = 'first';
  journal = true;
  reads = 0;

  join(count: number, skip: number[] = []): void {
    for (let i = 0; i < count; i++) {
      const index = this.joins.length === 0 ? 0 : this.joins[this.joins.length - 1].index + 1;
      if (skip.includes(index)) this.joins.push({ index: index + 1, userId: 7_000 + index + 1 });
      else this.joins.push({ index, userId: 7_000 + index });
    }
  }

  read = async (from: number, limit: number): Promise<PreQueuePage> => {
    this.reads++;
    const last = this.joins[this.joins.length - 1];
    return {
      journal: this.journal,
      opened: this.opened,
      preSeq: last ? last.index + 1 : 0,
      seeded: false,
      closed: false,
      joins: this.journal ? this.joins.filter((j) => j.index >= from).slice(0, limit) : [],
    };
  };
}

const digestOf = (key: Buffer, joins: { index: number; userId: number }[]) => {
  const digest = new PreQueueDigest();
  for (const { index, userId } of joins) digest.add(index, pseudonymOf(key, userId));
  return digest.digest();
};

describe('PreQueueFollower', () => {
  it('should end with the digest of the whole pre-queue however its reads fell between the joins', async () => {
    const key = randomBytes(32);
    const room = new FakeRoom();
    const follower = new PreQueueFollower(key);
    room.join(3);
    await follower.follow(room.read);
    room.join(12_000, [5]);
    await follower.follow(room.read, 7_000);
    expect(follower.size()).toBe(7_003);
    await follower.follow(room.read);
    room.join(1);
    await follower.follow(room.read);
    expect(follower.size()).toBe(room.joins.length);
    expect(follower.digestSoFar()).toBe(digestOf(key, room.joins));
    // Every join read waits to be found in MySQL.
    expect([...follower.pending]).toEqual(room.joins.map((j) => [j.index, j.userId]));
  });

  it('should read nothing more than asked per call, and nothing from a room being restored', async () => {
    const room = new FakeRoom();
    const follower = new PreQueueFollower(randomBytes(32));
    room.join(20_000);
    const page = await follower.follow(room.read, 6_000);
    expect(follower.size()).toBe(6_000);
    expect(page).toMatchObject({ journal: true });
    room.journal = false;
    expect(await follower.follow(room.read)).toMatchObject({ journal: false });
    expect(follower.size()).toBe(6_000);
  });

  it('should say stale once the room was written anew by a restore', async () => {
    const room = new FakeRoom();
    const follower = new PreQueueFollower(randomBytes(32));
    room.join(10);
    await follower.follow(room.read);
    room.opened = 'second';
    expect(await follower.follow(room.read)).toBe('stale');
  });
});
