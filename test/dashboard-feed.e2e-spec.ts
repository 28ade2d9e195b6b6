import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  MAX_FEEDS,
  MAX_FEEDS_PER_ADMIN,
  DashboardFeedService,
} from '../src/modules/dashboard/dashboard-feed.service.js';
import type { DashboardSnapshot, SaleFigures } from '../src/modules/dashboard/dashboard.types.js';
import { SaleBoardService } from '../src/modules/dashboard/sale-board.service.js';
import { EventStreamClient } from './support/event-stream.js';
import { portOf, sendWithoutReading } from './support/raw-http.js';
import {
  adminAuth,
  bearer,
  createSale,
  doubleClickCrowd,
  startApp,
  useApp,
  waitFor,
  waitForSettled,
  type TestApp,
} from './support/harness.js';

const FEED = '/api/v1/admin/events';

const saleIn = (snapshot: DashboardSnapshot, goodsId: number) =>
  snapshot.sales.find((sale) => sale.id === goodsId);

const atOf = (data: string) => (JSON.parse(data) as DashboardSnapshot).at;

const total = (series: number[] | undefined) => (series ?? []).reduce((sum, n) => sum + n, 0);

/** Answers per outcome over the chart's window. */
const answersOf = (sale: SaleFigures) =>
  Object.fromEntries(Object.entries(sale.rates.codes).map(([code, s]) => [code, total(s)]));

describe('the admin event feed (GET /api/v1/admin/events)', () => {
  const t = useApp({ TRUSTED_PROXIES: '127.0.0.1' });
  const feeds: EventStreamClient[] = [];
  const open = async (authorization: string | undefined = adminAuth()) => {
    const feed = await EventStreamClient.open(`${await t.app.getUrl()}${FEED}`, authorization);
    feeds.push(feed);
    return feed;
  };
  afterAll(() => {
    for (const feed of feeds) feed.close();
  });

  it('should answer 401 without a token and 403 to a user, in the contract shape', async () => {
    const anonymous = await t.http.get(FEED).expect(401);
    expect(anonymous.body).toMatchObject({ statusCode: 401, code: 'UNAUTHORIZED' });
    const user = await t.http.get(FEED).set('Authorization', bearer(7)).expect(403);
    expect(user.body).toMatchObject({ statusCode: 403, code: 'FORBIDDEN' });
    expect(user.headers['x-content-type-options']).toBe('nosniff');
  });

  it("should stream a sale's remaining, sold, orders, answers per second by code and a consistent verdict after a crowd", async () => {
    const stock = 30;
    const goodsId = await createSale(t.http, { stock });
    const users = Array.from({ length: 150 }, (_, i) => 71_000 + i);
    const responses = await doubleClickCrowd([t.http], goodsId, users);
    await waitForSettled(t.stores, goodsId);

    const feed = await open();
    expect(feed.response.status).toBe(200);
    expect(feed.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(feed.response.headers.get('cache-control')).toContain('no-store');
    expect(feed.response.headers.get('x-content-type-options')).toBe('nosniff');

    const byCode: Record<string, number> = {};
    for (const { status, code } of responses) {
      const outcome = status === 202 ? 'ACCEPTED' : code!;
      byCode[outcome] = (byCode[outcome] ?? 0) + 1;
    }
    expect(byCode.ACCEPTED).toBe(stock);
    const snapshot = await feed.snapshot<DashboardSnapshot>((candidate) => {
      const sale = saleIn(candidate, goodsId);
      return sale?.verdict?.consistent === true && sameAnswers(sale, byCode);
    }, 'a snapshot with every answer counted and a consistent verdict');
    const sale = saleIn(snapshot, goodsId)!;
    expect(sale).toMatchObject({
      status: 'SOLD_OUT',
      remaining: 0,
      preheated: true,
      sold: stock,
      inFlight: 0,
      dbStock: 0,
      totalStock: stock,
      orders: { pendingPayment: stock, paid: 0, cancelled: 0, refundRequired: 0 },
      units: { pendingPayment: stock, paid: 0, cancelled: 0, refundRequired: 0 },
      verdict: { consistent: true, drift: { redis: 0, db: 0 } },
    });
    expect(snapshot.queues?.find((queue) => queue.role === 'orders')).toMatchObject({
      messages: 0,
      consumers: 1,
    });
    expect(snapshot.problems).toEqual([]);
  });

  it('should show a cancel at once: sold down, remaining up, the verdict still consistent', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const buyer = 72_001;
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(buyer)).expect(202);
    const { orderNo } = await waitFor(async () => {
      const result = await t.http
        .get(`/api/v1/seckill/${goodsId}/result`)
        .set('Authorization', bearer(buyer));
      return result.body.status === 'SUCCESS' ? (result.body as { orderNo: string }) : null;
    });
    const feed = await open();
    await feed.snapshot<DashboardSnapshot>(
      (snapshot) => saleIn(snapshot, goodsId)?.sold === 1,
      'the purchase on the dashboard',
    );
    await t.http
      .post(`/api/v1/orders/${orderNo}/cancel`)
      .set('Authorization', bearer(buyer))
      .expect(200);
    const after = await feed.snapshot<DashboardSnapshot>((snapshot) => {
      const sale = saleIn(snapshot, goodsId);
      return sale?.sold === 0 && sale.verdict?.consistent === true && sale.verdict.checkedAt > 0;
    }, 'the cancel on the dashboard');
    expect(saleIn(after, goodsId)).toMatchObject({
      remaining: 5,
      sold: 0,
      orders: { pendingPayment: 0, paid: 0, cancelled: 1, refundRequired: 0 },
    });
  });

  it('should build one snapshot a second for any number of open feeds, and none once they close', async () => {
    closeAll();
    await waitFor(() => t.app.get(DashboardFeedService).openFeeds === 0, {
      what: 'feeds detached',
    });
    const build = vi.spyOn(t.app.get(SaleBoardService), 'build');
    try {
      const many = await Promise.all(Array.from({ length: 8 }, (_, i) => open(adminOf(i))));
      const startedAt = Date.now();
      await waitFor(() => many.every((feed) => feed.snapshots().length >= 3), {
        what: 'three snapshots on each of eight feeds',
      });
      const seconds = (Date.now() - startedAt) / 1000;
      // One build per tick (plus the first, at once), not one per feed.
      expect(build.mock.calls.length).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
      // A snapshot is built once and the same frame written to every feed.
      const framesByTime = new Map<number, Set<string>>();
      for (const feed of many) {
        for (const event of feed.events) {
          const at = (JSON.parse(event.data) as DashboardSnapshot).at;
          framesByTime.set(at, (framesByTime.get(at) ?? new Set()).add(event.data));
        }
      }
      expect([...framesByTime.values()].every((frames) => frames.size === 1)).toBe(true);

      for (const feed of many) feed.close();
      await waitFor(() => t.app.get(DashboardFeedService).openFeeds === 0, {
        what: 'feeds detached',
      });
      const builds = build.mock.calls.length;
      await sleep(2_500); // two ticks and a half: none may build
      expect(build.mock.calls.length).toBe(builds);
    } finally {
      build.mockRestore();
    }
  });

  it(`should refuse a feed beyond ${MAX_FEEDS} per instance with 429 and take one again once a feed closes`, async () => {
    closeAll();
    await waitFor(() => t.app.get(DashboardFeedService).openFeeds === 0, {
      what: 'feeds detached',
    });
    const full = await Promise.all(Array.from({ length: MAX_FEEDS }, (_, i) => open(adminOf(i))));
    expect(full.every((feed) => feed.response.status === 200)).toBe(true);
    // An admin with no feed open yet: refused for the instance's sake.
    const refused = await t.http.get(FEED).set('Authorization', bearer(76_000, true)).expect(429);
    expect(refused.body).toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    expect(refused.headers['retry-after']).toBeDefined();
    full[0].close();
    await waitFor(() => t.app.get(DashboardFeedService).openFeeds === MAX_FEEDS - 1, {
      what: 'one feed detached',
    });
    const again = await open(adminOf(0));
    expect(again.response.status).toBe(200);
    closeAll();
  });

  it(`should refuse a feed beyond ${MAX_FEEDS_PER_ADMIN} for one admin with 429, another admin still getting one`, async () => {
    closeAll();
    await waitFor(() => t.app.get(DashboardFeedService).openFeeds === 0, {
      what: 'feeds detached',
    });
    const admin = bearer(76_001, true);
    const mine = await Promise.all(Array.from({ length: MAX_FEEDS_PER_ADMIN }, () => open(admin)));
    expect(mine.every((feed) => feed.response.status === 200)).toBe(true);

    const more = await open(admin);
    expect(more.response.status).toBe(429);
    expect(await more.response.json()).toMatchObject({
      statusCode: 429,
      code: 'TOO_MANY_REQUESTS',
    });
    expect(more.response.headers.get('retry-after')).toMatch(/^[0-9]+$/);
    const other = await open(bearer(76_002, true));
    expect(other.response.status).toBe(200);
    expect(t.app.get(DashboardFeedService).openFeeds).toBe(MAX_FEEDS_PER_ADMIN + 1);
    closeAll();
  });

  it('should cut the feeds of a client that never reads within seconds, freeing their slots for the same admin', async () => {
    closeAll();
    const feeds = t.app.get(DashboardFeedService);
    await waitFor(() => feeds.openFeeds === 0, { what: 'feeds detached' });
    // Snapshots of a big board: the kernel's socket buffers (megabytes) fill in seconds, as
    // they would in minutes with small ones.
    const board = t.app.get(SaleBoardService);
    const build = board.build.bind(board);
    const padding = 'p'.repeat(512 * 1024);
    const spy = vi
      .spyOn(board, 'build')
      .mockImplementation(async (now) => ({ ...(await build(now)), padding }));
    const admin = bearer(76_003, true);
    const request = `GET ${FEED} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${admin}\r\n\r\n`;
    const unread = await Promise.all(
      Array.from({ length: MAX_FEEDS_PER_ADMIN }, () => sendWithoutReading(portOf(t.app), request)),
    );
    try {
      await waitFor(() => feeds.openFeeds === MAX_FEEDS_PER_ADMIN, {
        what: 'the unread feeds open',
      });
      const openedAt = Date.now();

      await waitFor(() => feeds.openFeeds === 0, {
        timeoutMs: 45_000,
        intervalMs: 250,
        what: 'the server to cut the feeds nobody reads',
      });
      expect(Date.now() - openedAt).toBeLessThan(40_000);
      const again = await open(admin);
      expect(again.response.status).toBe(200);
    } finally {
      spy.mockRestore();
      for (const socket of unread) socket.destroy();
      closeAll();
    }
  });

  /** Spreads feeds over admins, as many as each may open. */
  function adminOf(i: number): string {
    return bearer(75_000 + Math.floor(i / MAX_FEEDS_PER_ADMIN), true);
  }

  function closeAll(): void {
    for (const feed of feeds) feed.close();
  }
});

/** Each outcome's count in the chart's window is what the crowd was told, and nothing else. */
function sameAnswers(sale: SaleFigures, byCode: Record<string, number>): boolean {
  const answers = answersOf(sale);
  return (
    Object.keys(answers).length === Object.keys(byCode).length &&
    Object.entries(byCode).every(([code, count]) => answers[code] === count)
  );
}

describe('the feed across instances', () => {
  const instances: TestApp[] = [];
  afterAll(async () => {
    for (const instance of instances) await instance.close();
  });

  it("should show the sale's answers summed over every instance, whichever one serves the feed", async () => {
    for (let i = 0; i < 2; i++) instances.push(await startApp({ TRUSTED_PROXIES: '127.0.0.1' }));
    const stock = 40;
    const goodsId = await createSale(instances[0].http, { stock });
    const users = Array.from({ length: 200 }, (_, i) => 73_000 + i);
    const responses = await doubleClickCrowd(
      instances.map((instance) => instance.http),
      goodsId,
      users,
    );
    const answered = responses.length;
    const accepted = responses.filter((response) => response.status === 202).length;
    expect(accepted).toBe(stock);

    const feed = await EventStreamClient.open(
      `${await instances[1].app.getUrl()}${FEED}`,
      adminAuth(),
    );
    try {
      const snapshot = await feed.snapshot<DashboardSnapshot>((candidate) => {
        const sale = saleIn(candidate, goodsId);
        if (!sale) return false;
        const answers = answersOf(sale);
        const counted = Object.values(answers).reduce((sum, n) => sum + n, 0);
        return counted === answered && sale.sold === stock;
      }, 'both instances’ answers in the chart');
      expect(answersOf(saleIn(snapshot, goodsId)!).ACCEPTED).toBe(stock);
    } finally {
      feed.close();
    }
  });

  it('should build one snapshot a second for the whole fleet, whichever instances show a dashboard', async () => {
    const feeds = await Promise.all(
      instances.map(async (instance) =>
        EventStreamClient.open(`${await instance.app.getUrl()}${FEED}`, adminAuth()),
      ),
    );
    const builds = instances.map((instance) =>
      vi.spyOn(instance.app.get(SaleBoardService), 'build'),
    );
    try {
      const startedAt = Date.now();
      await waitFor(() => feeds.every((feed) => feed.snapshots().length >= 5), {
        what: 'five snapshots on a feed of each instance',
      });
      const seconds = (Date.now() - startedAt) / 1000;
      const built = builds.reduce((sum, build) => sum + build.mock.calls.length, 0);
      // One build a second in all (give or take the seconds at either end), not one per instance.
      expect(built).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
      // Both instances sent the same snapshots: one built, the other read it from Redis.
      const [a, b] = feeds.map((feed) => new Map(feed.events.map((e) => [atOf(e.data), e.data])));
      const shared = [...a.keys()].filter((at) => b.has(at));
      expect(shared.length).toBeGreaterThanOrEqual(3);
      expect(shared.every((at) => a.get(at) === b.get(at))).toBe(true);
    } finally {
      for (const build of builds) build.mockRestore();
      for (const feed of feeds) feed.close();
    }
  });

  it('should end open feeds when the app closes, so that closing does not wait for them', async () => {
    const instance = await startApp();
    const feed = await EventStreamClient.open(`${await instance.app.getUrl()}${FEED}`, adminAuth());
    await feed.snapshot<DashboardSnapshot>(() => true, 'a first snapshot');
    const closing = Date.now();
    await instance.close();
    expect(Date.now() - closing).toBeLessThan(10_000);
    await waitFor(() => feed.ended, { what: 'the feed to end' });
  });
});
