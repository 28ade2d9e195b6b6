import { Redis } from 'ioredis';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueKeys } from '../src/infra/redis/seckill-keys.js';
import { DrawJournalService } from '../src/modules/queue-journal/draw-journal.service.js';
import { drawSeed, pseudonymsOf } from '../src/modules/queue-journal/fairness.js';
import { QueueJournalRepository } from '../src/modules/queue-journal/queue-journal.repository.js';
import {
  verifyDraw,
  type DrawExport,
  type PublishedDraw,
} from '../src/modules/waiting-room/draw-verifier.js';
import { PreQueueDigest } from '../src/modules/waiting-room/pre-queue-digest.js';
import { EventStreamClient } from './support/event-stream.js';
import { bearer, createSale, startApp, Stores, waitFor, type TestApp } from './support/harness.js';
import { PrivateRedis } from './support/private-redis.js';
import { baseUrlOf } from './support/sse.js';

interface QueueAnswer {
  state: string;
  position: number | null;
  admittedUntil?: string;
  final: boolean;
}

describe('the waiting room outlives Redis: restarted empty or from an old snapshot', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start({ dir: mkdtempSync(join(tmpdir(), 'seckill-queue-')) });
    t = await startApp({
      REDIS_URL: redis.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      THROTTLE_ENABLED: 'false',
      QUEUE_TICK_MS: '50',
      PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
      // The tests' own requests come from the trusted proxy (counted per user only); a buyer
      // behind it is named by X-Forwarded-For.
      TRUSTED_PROXIES: '127.0.0.1',
      QUEUE_MAX_ACCOUNTS_PER_ADDRESS: '3',
    });
  });

  afterAll(async () => {
    await t.close();
    await redis.kill();
    await stores.close();
  });

  const joinQueue = (goodsId: number, userId: number) =>
    t.http.post(`/api/v1/seckill/${goodsId}/queue`).set('Authorization', bearer(userId));
  const read = (goodsId: number, userId: number) =>
    t.http.get(`/api/v1/seckill/${goodsId}/queue`).set('Authorization', bearer(userId));
  const standings = async (goodsId: number, users: number[]) =>
    Promise.all(
      users.map(async (userId) => (await read(goodsId, userId).expect(200)).body as QueueAnswer),
    );
  const seedIn = async (goodsId: number) => {
    const direct = new Redis(redis.url);
    try {
      return await direct.hget(queueKeys(goodsId).state, 'seed');
    } finally {
      direct.disconnect();
    }
  };

  /** A queue sale of 2 units, 6 buyers joined before its start, 2 admitted, one of them bought. */
  const admittedSale = async (from: number) => {
    const goodsId = await createSale(t.http, {
      stock: 2,
      startsInMs: 1_500,
      queue: { admitPerSecond: 1_000, admissionTtlSeconds: 60 },
    });
    const buyers = Array.from({ length: 6 }, (_, i) => from + i);
    for (const userId of buyers) await joinQueue(goodsId, userId).expect(200);
    const before = await waitFor(
      async () => {
        const now = await standings(goodsId, buyers);
        // Two admitted, the rest placed (each read after the shuffle).
        return now.filter((s) => s.state === 'ADMITTED').length === 2 &&
          now.every((s) => s.state === 'ADMITTED' || s.position !== null)
          ? now
          : null;
      },
      { what: 'two admitted' },
    );
    const admitted = buyers.filter((_, i) => before[i].state === 'ADMITTED');
    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(admitted[0]))
      .expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    return { goodsId, buyers, admitted, before, seed: await seedIn(goodsId) };
  };

  /**
   * Until the room answers again: 503 with Retry-After meanwhile, never a wrong state. The room
   * may answer and then be restored once more (the on-demand restore of a standing read can come
   * before the rebuild the restart's watcher begins, whose wipe restores it again), so every read
   * and join after a restart asks as the buyer's page does: again after Retry-After.
   */
  const untilAnswered = async (
    goodsId: number,
    userId: number,
    { ask = read, refusedFirst = true }: { ask?: typeof read; refusedFirst?: boolean } = {},
  ) => {
    const refusals: string[] = [];
    const answer = await waitFor(
      async () => {
        const response = await ask(goodsId, userId);
        if (response.status === 200) return response.body as QueueAnswer;
        const retryAfter = response.headers['retry-after'] as string | undefined;
        refusals.push(
          `${response.status} ${response.body.code}${retryAfter ? ` ${retryAfter}` : ''}`,
        );
        return null;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the standing to answer again' },
    );
    for (const refusal of refusals) expect(refusal).toMatch(/^503 UNAVAILABLE( \d+)?$/);
    if (refusedFirst) {
      expect(refusals.some((refusal) => /^503 UNAVAILABLE \d+$/.test(refusal))).toBe(true);
    }
    return answer;
  };

  const expectSameRoom = async (sale: Awaited<ReturnType<typeof admittedSale>>, lostAt: number) => {
    const { goodsId, buyers, admitted, before, seed } = sale;
    const after = await Promise.all(
      buyers.map((userId) => untilAnswered(goodsId, userId, { refusedFirst: false })),
    );
    // Every waiting buyer in the same place, the seed never drawn again.
    for (const [i, userId] of buyers.entries()) {
      if (admitted.includes(userId)) continue;
      expect(after[i]).toMatchObject({ state: 'WAITING', position: before[i].position });
    }
    expect(await seedIn(goodsId)).toBe(seed);
    // The buyer kept its purchase; the undecided one its admission, with the time it had left.
    expect(after[buyers.indexOf(admitted[0])].state).toBe('PURCHASED');
    const undecided = buyers.indexOf(admitted[1]);
    expect(after[undecided].state).toBe('ADMITTED');
    const leftBefore = Date.parse(before[undecided].admittedUntil!) - lostAt;
    expect(Date.parse(after[undecided].admittedUntil!) - Date.now()).toBeGreaterThan(
      leftBefore - 3_000,
    );
    // A buyer who joins now goes behind everyone who joined before.
    const late = buyers[0] + 100;
    await untilAnswered(goodsId, late, { ask: joinQueue, refusedFirst: false });
    expect((await untilAnswered(goodsId, late, { refusedFirst: false })).position).toBe(5);
    // The undecided buyer can still buy with the admission it kept, once the sale reopens.
    await waitFor(
      async () => {
        const answer = await t.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(admitted[1]));
        expect([202, 503]).toContain(answer.status);
        return answer.status === 202;
      },
      { timeoutMs: 30_000, intervalMs: 300, what: 'the admitted buyer to buy' },
    );
  };

  it('should keep every join, the seed, the admissions and their time after Redis restarts empty, answering 503 with Retry-After meanwhile', async () => {
    const sale = await admittedSale(31_000);
    const waiting = sale.buyers.find((userId) => !sale.admitted.includes(userId))!;
    const stream = await EventStreamClient.open(
      `${baseUrlOf(t.app)}/api/v1/seckill/${sale.goodsId}/queue/stream`,
      bearer(waiting),
    );
    await stream.snapshot<QueueAnswer>((s) => s.state === 'WAITING', 'a first status');

    redis.forgetSnapshot();
    // The restart's rebuild goes through every open sale (earlier files' too) before this one.
    await stores.endOtherSales(sale.goodsId);
    await redis.kill();
    const lostAt = Date.now();
    await redis.up(); // empty: the waiting room, its seed and its admissions are gone
    // The open stream is told to read anew: it ends, rather than show a place kept in memory.
    await waitFor(() => stream.ended, { what: 'the open stream to end' });
    await untilAnswered(sale.goodsId, waiting);
    await expectSameRoom(sale, lostAt);
  });

  it('should restore the room MySQL holds over an older snapshot: no seed drawn again, no used admission unused', async () => {
    const goodsId = await createSale(t.http, {
      stock: 2,
      startsInMs: 2_000,
      queue: { admitPerSecond: 1_000, admissionTtlSeconds: 60 },
    });
    // The snapshot holds a pre-queue of three, before the seed and before any admission.
    const direct = new Redis(redis.url);
    for (const userId of [32_000, 32_001, 32_002]) await joinQueue(goodsId, userId).expect(200);
    await direct.save();
    direct.disconnect();
    const buyers = [32_000, 32_001, 32_002, 32_003, 32_004, 32_005];
    for (const userId of buyers.slice(3)) await joinQueue(goodsId, userId).expect(200);
    const before = await waitFor(
      async () => {
        const now = await standings(goodsId, buyers);
        // Two admitted, the rest placed (each read after the shuffle).
        return now.filter((s) => s.state === 'ADMITTED').length === 2 &&
          now.every((s) => s.state === 'ADMITTED' || s.position !== null)
          ? now
          : null;
      },
      { what: 'two admitted' },
    );
    const admitted = buyers.filter((_, i) => before[i].state === 'ADMITTED');
    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(admitted[0]))
      .expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    const sale = { goodsId, buyers, admitted, before, seed: await seedIn(goodsId) };

    // The restart's rebuild goes through every open sale (earlier files' too) before this one.
    await stores.endOtherSales(goodsId);
    await redis.kill();
    const lostAt = Date.now();
    await redis.up(); // from the snapshot: three joins, no seed, nobody admitted
    await untilAnswered(goodsId, buyers[5]);
    await expectSameRoom(sale, lostAt);
    // The used admission stays used: the buyer who bought cannot buy again.
    const again = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(admitted[0]));
    expect(again.status).toBe(409);
  });

  it('should keep the pre-queue open until the start when Redis restarts after the room committed to its secret', async () => {
    const startsAt = Date.now() + 20_000;
    const goodsId = await createSale(t.http, {
      stock: 2,
      startsInMs: 20_000,
      queue: { admitPerSecond: 1_000, admissionTtlSeconds: 60 },
    });
    await joinQueue(goodsId, 841).expect(200);
    // The room's row in MySQL holds the committed secret from the first join on (no seed: that
    // is drawn at the start, from the secret and the pre-queue). Redis restarts empty after.
    await t.app.get(DrawJournalService).secretsOf(goodsId);
    // The restart's rebuild goes through every open sale (earlier files' too) before this one.
    await stores.endOtherSales(goodsId);
    await redis.kill();
    await redis.up();
    expect((await untilAnswered(goodsId, 841)).state).toBe('WAITING');

    await joinQueue(goodsId, 842).expect(200);
    expect(Date.now()).toBeLessThan(startsAt);
    const direct = new Redis(redis.url);
    try {
      // Joined before the start: in the pre-queue the shuffle orders, not behind it.
      expect(await direct.zscore(queueKeys(goodsId).pre, '842')).not.toBeNull();
      expect(await direct.zscore(queueKeys(goodsId).line, '842')).toBeNull();
      expect(await direct.hget(queueKeys(goodsId).state, 'seed')).toBeNull();
    } finally {
      direct.disconnect();
    }
  });

  it('should write the room back from MySQL when Redis holds another pre-queue than the draw MySQL keeps, and admit in that draw', async () => {
    const goodsId = await createSale(t.http, {
      stock: 4,
      startsInMs: 2_000,
      queue: { admitPerSecond: 1_000, admissionTtlSeconds: 60 },
    });
    const buyers = [861, 862, 863];
    for (const userId of buyers) await joinQueue(goodsId, userId).expect(200);
    // A fourth join MySQL holds and Redis lost (never restored since), and the draw MySQL kept
    // for the four: Redis's pre-queue (three) is not the one the seed was drawn for.
    const lost = 864;
    await t.app
      .get(QueueJournalRepository)
      .insertJoins([{ goodsId, userId: lost, line: 0, position: 3, address: null }]);
    const draws = t.app.get(DrawJournalService);
    const { secret, pseudonymKey } = await draws.secretsOf(goodsId);
    const digest = new PreQueueDigest();
    const pseudonyms = pseudonymsOf(pseudonymKey, [...buyers, lost]);
    digest.addAll(pseudonyms.map((pseudonym, index) => ({ index, pseudonym })));
    const seed = drawSeed(secret, digest.digest());
    await draws.draw(goodsId, { seed, digest: digest.digest(), preSize: 4 });

    // At the start Redis refuses that draw; the room is written back from MySQL with it.
    const all = await waitFor(
      async () => {
        const reads = await Promise.all([...buyers, lost].map((userId) => read(goodsId, userId)));
        return reads.every((r) => r.status === 200 && r.body.state === 'ADMITTED') ? reads : null;
      },
      { what: 'all four admitted, the lost join with them', timeoutMs: 20_000 },
    );
    expect(all).toHaveLength(4);
    expect(await seedIn(goodsId)).toBe(seed);
    const published = (await t.http.get(`/api/v1/goods/${goodsId}/fairness`).expect(200))
      .body as PublishedDraw;
    const exported = (
      await t.http
        .get(`/api/v1/admin/goods/${goodsId}/entries`)
        .set('Authorization', bearer(1, true))
        .expect(200)
    ).body as DrawExport;
    expect(verifyDraw(published, exported)).toMatchObject({ ok: true });
  });

  it('should refuse an address more accounts than QUEUE_MAX_ACCOUNTS_PER_ADDRESS with 429, counted in MySQL so that a restart forgets nothing', async () => {
    const goodsId = await createSale(t.http, {
      stock: 2,
      startsInMs: 60_000,
      queue: { admitPerSecond: 1_000, admissionTtlSeconds: 60 },
    });
    const joinFrom = (userId: number, address: string) =>
      joinQueue(goodsId, userId).set('X-Forwarded-For', address);
    for (const userId of [33_000, 33_001, 33_002]) {
      await joinFrom(userId, '203.0.113.7').expect(200);
    }
    const refused = await joinFrom(33_003, '203.0.113.7').expect(429);
    expect(refused.body.code).toBe('TOO_MANY_REQUESTS');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Nothing joined: neither in Redis nor in MySQL.
    expect((await standings(goodsId, [33_003]))[0].state).toBe('NOT_JOINED');
    const [rows] = (await stores.mysql.query(
      'SELECT COUNT(*) AS n FROM seckill_queue_join WHERE goods_id = ? AND user_id = 33003',
      [goodsId],
    )) as unknown as [{ n: number }[]];
    expect(Number(rows[0].n)).toBe(0);
    // Another address, and one who joined already, are served.
    await joinFrom(33_010, '198.51.100.9').expect(200);
    await joinFrom(33_001, '203.0.113.7').expect(200);

    redis.forgetSnapshot();
    // The restart's rebuild goes through every open sale (earlier files' too) before this one.
    await stores.endOtherSales(goodsId);
    await redis.kill();
    await redis.up(); // empty: the counts went with it, the joins did not
    await untilAnswered(goodsId, 33_000);
    expect((await joinFrom(33_004, '203.0.113.7').expect(429)).body.code).toBe('TOO_MANY_REQUESTS');
    expect((await joinFrom(33_002, '203.0.113.7').expect(200)).body.state).toBe('WAITING');
  });
  it("should keep a draw sale's entries, its draw, every right and the waitlist's ranks after Redis restarts empty", async () => {
    const goodsId = await createSale(t.http, {
      stock: 2,
      startsInMs: 2_000,
      draw: { closesInMs: 1_500, claimSeconds: 60 },
    });
    const entrants = Array.from({ length: 6 }, (_, i) => 34_000 + i);
    const entry = (userId: number) =>
      t.http.get(`/api/v1/seckill/${goodsId}/entry`).set('Authorization', bearer(userId));
    for (const userId of entrants) {
      await t.http
        .post(`/api/v1/seckill/${goodsId}/entry`)
        .set('Authorization', bearer(userId))
        .expect(200);
    }
    type EntryAnswer = { state: string; rank: number | null; rightUntil?: string };
    const read = async () =>
      Promise.all(
        entrants.map(async (userId) => (await entry(userId).expect(200)).body as EntryAnswer),
      );
    const before = await waitFor(
      async () => {
        const now = await read();
        return now.filter((s) => s.state === 'SELECTED').length === 2 &&
          now.every((s) => s.state === 'SELECTED' || s.rank !== null)
          ? now
          : null;
      },
      { what: 'two rights out' },
    );
    const holders = entrants.filter((_, i) => before[i].state === 'SELECTED');
    await waitFor(
      async () =>
        (await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(holders[0])))
          .status === 202,
      { what: 'the first holder to buy (from the start)' },
    );
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    const seed = await seedIn(goodsId);

    redis.forgetSnapshot();
    // The restart's rebuild goes through every open sale (earlier files' too) before this one.
    await stores.endOtherSales(goodsId);
    await redis.kill();
    await redis.up(); // empty: the entries, the draw and the rights are gone from Redis
    const after = await Promise.all(
      entrants.map(async (userId) => {
        const answer = await untilAnswered(goodsId, userId, {
          ask: (_, id) => entry(id),
          refusedFirst: false,
        });
        return answer as unknown as EntryAnswer;
      }),
    );
    for (const [i, userId] of entrants.entries()) {
      if (holders.includes(userId)) continue;
      expect(after[i]).toMatchObject({ state: 'WAITLISTED', rank: before[i].rank });
    }
    expect(await seedIn(goodsId)).toBe(seed);
    expect(after[entrants.indexOf(holders[0])].state).toBe('PURCHASED');
    const kept = after[entrants.indexOf(holders[1])];
    expect(kept.state).toBe('SELECTED');
    expect(Date.parse(kept.rightUntil!)).toBeGreaterThan(Date.now() + 50_000);
    // Nobody else got a right meanwhile, and the holder still buys with it.
    expect(after.filter((s) => s.state === 'SELECTED')).toHaveLength(1);
    await waitFor(
      async () => {
        const answer = await t.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(holders[1]));
        expect([202, 503]).toContain(answer.status);
        return answer.status === 202;
      },
      { timeoutMs: 30_000, intervalMs: 300, what: 'the holder to buy' },
    );
  });
});
