import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DrawExport, PublishedDraw } from '../src/modules/waiting-room/draw-verifier.js';
import { queueOrder } from '../src/modules/waiting-room/queue-order.js';
import { EventStreamClient } from './support/event-stream.js';
import {
  adminAuth,
  bearer,
  createSale,
  purchaseResult,
  useApp,
  waitFor,
} from './support/harness.js';
import { baseUrlOf } from './support/sse.js';

interface EntryAnswer {
  state: string;
  rank: number | null;
  ahead: number | null;
  rightUntil?: string;
  final: boolean;
  receipt?: { joinIndex: number; pseudonym: string; seedCommitment: string };
}

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
const sleepUntil = (at: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

describe('a draw sale: entries, the draw, purchase rights and the waitlist', () => {
  const t = useApp({ THROTTLE_ENABLED: 'false', SOLD_OUT_MEMO_MS: '0', QUEUE_TICK_MS: '50' });
  const stores = t.stores;

  const enter = (goodsId: number, userId: number) =>
    t.http.post(`/api/v1/seckill/${goodsId}/entry`).set('Authorization', bearer(userId));
  const entry = async (goodsId: number, userId: number): Promise<EntryAnswer> =>
    (
      await t.http
        .get(`/api/v1/seckill/${goodsId}/entry`)
        .set('Authorization', bearer(userId))
        .expect(200)
    ).body as EntryAnswer;
  const entries = (goodsId: number, users: number[]) =>
    Promise.all(users.map((userId) => entry(goodsId, userId)));
  const buy = (goodsId: number, userId: number) =>
    t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));

  it('should show the draw fields, refuse bad ones with 400, and refuse entries outside the window or to another sale with 409 ENTRIES_CLOSED', async () => {
    const now = Date.now();
    const at = (ms: number) => new Date(now + ms).toISOString();
    const base = {
      name: 'Sneaker drop',
      price: 199,
      stock: 5,
      startAt: at(60_000),
      endAt: at(120_000),
      admission: 'draw',
      entriesOpenAt: at(10_000),
      entriesCloseAt: at(50_000),
      claimSeconds: 600,
    };
    const create = (body: object) =>
      t.http.post('/api/v1/admin/goods').set('Authorization', adminAuth()).send(body);
    const created = await create(base).expect(201);
    expect(created.body).toMatchObject({
      admission: 'draw',
      entriesOpenAt: base.entriesOpenAt,
      entriesCloseAt: base.entriesCloseAt,
      claimSeconds: 600,
      winnersFactor: 1,
      stockShards: 1,
    });
    expect(created.body).not.toHaveProperty('admitPerSecond');
    const goodsId = (created.body as { id: number }).id;
    const shown = await t.http.get(`/api/v1/goods/${goodsId}`).expect(200);
    expect(shown.body).toMatchObject({ admission: 'draw', claimSeconds: 600, winnersFactor: 1 });

    for (const bad of [
      { ...base, entriesCloseAt: at(61_000) },
      { ...base, entriesOpenAt: at(50_000) },
      { ...base, claimSeconds: undefined },
      { ...base, entriesCloseAt: undefined },
      { ...base, claimSeconds: 0 },
      { ...base, winnersFactor: 0 },
      { ...base, winnersFactor: 1.5 },
      { ...base, admitPerSecond: 10 },
      { ...base, stockShards: 2 },
      { ...base, admission: 'open' },
      { ...base, admission: 'queue', admitPerSecond: 10, admissionTtlSeconds: 60 },
    ]) {
      const refused = await create(bad).expect(400);
      expect(refused.body.code).toBe('VALIDATION_FAILED');
    }

    // Before entriesOpenAt; another kind of sale; an unknown goods; a bad id.
    const early = await enter(goodsId, 9_600).expect(409);
    expect(early.body.code).toBe('ENTRIES_CLOSED');
    const open = await createSale(t.http, { stock: 1 });
    expect((await enter(open, 9_600).expect(409)).body.code).toBe('ENTRIES_CLOSED');
    expect(
      (await t.http.get(`/api/v1/seckill/${open}/entry`).set('Authorization', bearer(9_600))).body
        .code,
    ).toBe('ENTRIES_CLOSED');
    expect((await enter(999_999_999, 9_600).expect(404)).body.code).toBe('GOODS_NOT_FOUND');
    expect((await enter(0, 9_600).expect(400)).body.code).toBe('VALIDATION_FAILED');
    // A draw sale has no waiting room to join: its entries are the way in.
    const joined = await t.http
      .post(`/api/v1/seckill/${goodsId}/queue`)
      .set('Authorization', bearer(9_600))
      .expect(409);
    expect(joined.body.code).toBe('QUEUE_NOT_OPEN');
    expect(await entry(goodsId, 9_600)).toMatchObject({ state: 'NOT_ENTERED', final: false });
  });

  it('should give rights to the first entries of the draw, refuse anyone else NOT_SELECTED, pass ten lapsed rights to exactly the next ten entries and a returned unit to the next, and verify', async () => {
    const closesInMs = 3_000;
    const startsInMs = 4_500;
    const goodsId = await createSale(t.http, {
      stock: 10,
      startsInMs,
      lastsMs: 60_000,
      draw: { closesInMs, claimSeconds: 8 },
    });
    const startAt = Date.parse(
      ((await t.http.get(`/api/v1/goods/${goodsId}`).expect(200)).body as { startAt: string })
        .startAt,
    );
    const fairness = async () =>
      (await t.http.get(`/api/v1/goods/${goodsId}/fairness`).expect(200)).body as PublishedDraw;
    const committed = await fairness();
    expect(committed).toMatchObject({ drawn: false });

    const entrants = range(9_700, 30);
    const receipts = new Map<number, number>();
    for (const userId of entrants) {
      const answer = (await enter(goodsId, userId).expect(200)).body as EntryAnswer;
      expect(answer).toMatchObject({ state: 'ENTERED', rank: null, final: false });
      expect(answer.receipt!.seedCommitment).toBe(committed.seedCommitment);
      receipts.set(userId, answer.receipt!.joinIndex);
    }
    // Entering again keeps the entry.
    const again = (await enter(goodsId, entrants[0]).expect(200)).body as EntryAnswer;
    expect(again.receipt!.joinIndex).toBe(receipts.get(entrants[0]));
    const stream = await EventStreamClient.open(
      `${baseUrlOf(t.app)}/api/v1/seckill/${goodsId}/entry/stream`,
      bearer(entrants[0]),
    );
    await stream.snapshot<EntryAnswer>((s) => s.state === 'ENTERED', 'ENTERED on the stream');

    // The draw at entriesCloseAt: from then on no entry is taken.
    const rightsOut = await waitFor(
      async () => {
        const now = await entries(goodsId, entrants);
        return now.filter((s) => s.state === 'SELECTED').length === 10 &&
          now.every((s) => s.state === 'SELECTED' || s.rank !== null)
          ? now
          : null;
      },
      { what: 'the draw and its ten rights' },
    );
    expect(Date.now()).toBeLessThan(startAt);
    const late = await enter(goodsId, 9_799).expect(409);
    expect(late.body.code).toBe('ENTRIES_CLOSED');

    // The draw is the same whoever computes it: the revealed seed orders the receipts' indices.
    const revealed = await fairness();
    expect(revealed).toMatchObject({ drawn: true, preSize: entrants.length });
    const order = queueOrder(revealed.seed!, revealed.preSize!);
    const placeOf = (userId: number) => order.placeOf(receipts.get(userId)!);
    const byPlace = [...entrants].sort((a, b) => placeOf(a) - placeOf(b));
    entrants.forEach((userId, i) => {
      const standing = rightsOut[i];
      if (placeOf(userId) < 10) {
        expect(standing.state).toBe('SELECTED');
        // A right given before the start lasts claimSeconds from the start.
        expect(Date.parse(standing.rightUntil!)).toBeGreaterThanOrEqual(startAt + 7_000);
        expect(Date.parse(standing.rightUntil!)).toBeLessThanOrEqual(startAt + 9_000);
      } else {
        expect(standing).toMatchObject({ state: 'WAITLISTED', rank: placeOf(userId) + 1 });
      }
    });
    // The stream tells the draw too, with no read of its own (the room's).
    const drawn = placeOf(entrants[0]) < 10 ? 'SELECTED' : 'WAITLISTED';
    const told = await stream.snapshot<EntryAnswer>((s) => s.state !== 'ENTERED', 'the draw');
    expect(told.state).toBe(drawn);
    if (drawn === 'WAITLISTED') expect(told.rank).toBe(placeOf(entrants[0]) + 1);
    stream.close();

    // Before the start a right buys nothing yet; after it, only a right in force buys.
    expect((await buy(goodsId, byPlace[0]).expect(409)).body.code).toBe('SALE_NOT_STARTED');
    await sleepUntil(startAt + 100);
    for (const outsider of [byPlace[10], byPlace[29], 9_799]) {
      expect((await buy(goodsId, outsider).expect(403)).body.code).toBe('NOT_SELECTED');
    }

    // Nobody uses the first ten rights: they lapse, and pass to exactly places 10..19.
    const second = await waitFor(
      async () => {
        const now = await entries(goodsId, byPlace);
        return now.slice(10, 20).every((s) => s.state === 'SELECTED') ? now : null;
      },
      { what: 'the ten lapsed rights passed on', timeoutMs: 20_000 },
    );
    expect(second.slice(0, 10).map((s) => s.state)).toEqual(Array(10).fill('EXPIRED'));
    expect(second.slice(20).map((s) => s.rank)).toEqual(range(21, 10));
    expect((await buy(goodsId, byPlace[0]).expect(403)).body.code).toBe('NOT_SELECTED');

    // A right used, its order cancelled: the unit back passes a right to the next entry.
    await buy(goodsId, byPlace[10]).expect(202);
    const result = await waitFor(
      async () => {
        const now = await purchaseResult(t.http, goodsId, byPlace[10]);
        return now.status === 'SUCCESS' ? now : null;
      },
      { what: 'the order written' },
    );
    expect((await entry(goodsId, byPlace[10])).state).toBe('PURCHASED');
    expect((await entry(goodsId, byPlace[20])).state).toBe('WAITLISTED');
    await t.http
      .post(`/api/v1/orders/${result.orderNo}/cancel`)
      .set('Authorization', bearer(byPlace[10]))
      .expect(200);
    await waitFor(async () => (await entry(goodsId, byPlace[20])).state === 'SELECTED', {
      what: 'the returned unit passed to place 20',
    });
    const third = await entries(goodsId, byPlace);
    expect(third.slice(21).map((s) => s.state)).toEqual(Array(9).fill('WAITLISTED'));
    expect(third.filter((s) => s.state === 'SELECTED')).toHaveLength(10);
    await buy(goodsId, byPlace[20]).expect(202);
    expect((await stores.orders(goodsId)).length).toBeLessThanOrEqual(10);

    // The operator's dashboard: entries, rights out, claimed, lapsed and the waitlist's head.
    const feed = await EventStreamClient.open(
      `${baseUrlOf(t.app)}/api/v1/admin/events`,
      adminAuth(),
    );
    try {
      type Board = { sales: { id: number; draw: Record<string, unknown> | null }[] };
      const board = await feed.snapshot<Board>(
        (snapshot) =>
          snapshot.sales.some((sale) => sale.id === goodsId && sale.draw?.claimed === 2),
        'the draw on the dashboard',
      );
      expect(board.sales.find((sale) => sale.id === goodsId)!.draw).toEqual({
        goodsId,
        claimSeconds: 8,
        winnersFactor: 1,
        drawn: true,
        entries: 30,
        rightsOut: 9,
        claimed: 2,
        lapsed: 10,
        waitlistHead: 22,
        waitlisted: 9,
      });
    } finally {
      feed.close();
    }

    // The export under pseudonyms: the verifier recomputes the order and every right's place.
    const exported = (
      await t.http
        .get(`/api/v1/admin/goods/${goodsId}/entries`)
        .set('Authorization', adminAuth())
        .expect(200)
    ).body as DrawExport;
    expect(exported.preQueue).toHaveLength(30);
    expect(exported.after).toHaveLength(0);
    expect(exported.preQueue.filter((e) => e.place !== null)).toHaveLength(21);
    const dir = mkdtempSync(joinPath(tmpdir(), 'verify-draw-'));
    const file = joinPath(dir, 'export.json');
    try {
      writeFileSync(file, JSON.stringify(exported));
      const verified = await new Promise<{ status: number; stdout: string }>((resolve) => {
        execFile(
          'npx',
          ['tsx', 'scripts/verify-draw.ts', '--goods', String(goodsId)].concat([
            '--base-url',
            baseUrlOf(t.app),
            '--export',
            file,
          ]),
          { encoding: 'utf8' },
          (error, stdout) => resolve({ status: error ? Number(error.code) : 0, stdout }),
        );
      });
      expect(verified.stdout).toMatch(/^OK /);
      expect(verified.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
