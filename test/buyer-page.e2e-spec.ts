import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserTab, type BrowserTab } from './support/browser.js';
import { TcpProxy } from './support/tcp-proxy.js';
import {
  adminAuth,
  bearer,
  createSale,
  purchaseResult,
  token,
  useApp,
  waitFor,
} from './support/harness.js';

/**
 * The buyer's page in a real browser: headless Chromium driven by playwright-core opens
 * /sale/:id with the buyer's token, and everything the buyer does goes through the page's own
 * buttons: the challenge is solved by the page's script, the purchase token fetched, the result
 * pushed by the stream.
 */
describe("the buyer's page in a browser", () => {
  const t = useApp({
    SECKILL_REQUIRE_TOKEN: 'true',
    SECKILL_REQUIRE_CHALLENGE: 'true',
    // The page solves each challenge with Web Crypto; a low cost keeps the test quick.
    CHALLENGE_COST: '200',
    QUEUE_TICK_MS: '50',
  });
  let tab: BrowserTab;
  let page: Page;

  beforeAll(async () => {
    tab = await openBrowserTab();
    page = tab.page;
  });
  afterAll(async () => {
    await tab?.browser.close();
  });

  const text = (testId: string) => tab.text(testId).catch(() => null);
  const seen = (testId: string, expected: string | RegExp, what: string) =>
    waitFor(
      async () => {
        const now = await text(testId);
        return now !== null &&
          (typeof expected === 'string' ? now === expected : expected.test(now))
          ? now
          : null;
      },
      { timeoutMs: 20_000, intervalMs: 100, what },
    );
  const operator = (goodsId: number, action: 'pause' | 'resume') =>
    t.http
      .post(`/api/v1/admin/goods/${goodsId}/queue/${action}`)
      .set('Authorization', adminAuth())
      .expect(200);
  const joinWithoutChallenge = (goodsId: number, userId: number) =>
    t.http.post(`/api/v1/seckill/${goodsId}/queue`).set('Authorization', bearer(userId));
  const standingOf = async (goodsId: number, userId: number) =>
    (
      await t.http
        .get(`/api/v1/seckill/${goodsId}/queue`)
        .set('Authorization', bearer(userId))
        .expect(200)
    ).body as { state: string; position: number | null; etaSeconds: number | null };
  const banner = () => page.locator('#goods-problem');
  /**
   * A queue sale starting in 2 s, its admissions paused: whoever joins waits, with a place from
   * the start. Paused before the start, since the pacer reads a pause within a second.
   */
  const pausedQueueSale = async () => {
    const goodsId = await createSale(t.http, {
      stock: 5,
      startsInMs: 2_000,
      queue: { admitPerSecond: 10, admissionTtlSeconds: 60 },
    });
    await operator(goodsId, 'pause');
    return goodsId;
  };
  /** The buyer joins through the page's button (the page solves the challenge). */
  const joinOnPage = async (standing = 'WAITING') => {
    await waitFor(async () => !(await page.getByTestId('queue-join').isDisabled()), {
      what: 'the join button enabled',
    });
    await page.getByTestId('queue-join').click();
    await seen('queue-state', standing, 'the buyer in the waiting room');
  };

  it('should let a buyer join a queue sale before the start, show their place, admit them after it and show SUCCESS with the order number', async () => {
    const startsInMs = 8_000;
    const startAt = Date.now() + startsInMs;
    const goodsId = await createSale(t.http, {
      stock: 5,
      startsInMs,
      queue: { admitPerSecond: 10, admissionTtlSeconds: 60 },
    });
    // Held by the operator until the buyer has seen a place: then it is resumed.
    await operator(goodsId, 'pause');
    const buyer = 71_001;
    const buyerToken = token(buyer);
    const base = await t.app.getUrl();
    await page.goto(`${base}/sale/${goodsId}#token=${buyerToken}`);

    await seen('queue-state', 'NOT_JOINED', 'the page knows the buyer has not joined');
    expect(await text('countdown')).toMatch(/^Starts in \d+:\d\d$/);
    expect(await page.getByTestId('buy').isDisabled()).toBe(true);
    await page.getByTestId('queue-join').click();
    await seen('queue-state', 'WAITING', 'the buyer in the waiting room');
    // The commitment the order is drawn with, as the goods answer has it, and the join's receipt.
    const goods = await t.http.get(`/api/v1/goods/${goodsId}`).expect(200);
    expect(await text('seed-commitment')).toBe(goods.body.seedCommitment);
    await seen(
      'queue-receipt',
      /^Your receipt: join index 0, pseudonym [0-9a-f]{16}…/,
      'the receipt',
    );
    // Joined before the start, so the place is drawn by the shuffle: none yet.
    expect(Date.now()).toBeLessThan(startAt);
    expect(await text('queue-position')).toBe('');
    // A join without a solved challenge is refused: the page's join carried one.
    expect((await joinWithoutChallenge(goodsId, 71_002)).status).toBe(403);

    const place = await seen('queue-position', /^\d+$/, 'a place, pushed after the shuffle');
    const standing = await t.http
      .get(`/api/v1/seckill/${goodsId}/queue`)
      .set('Authorization', bearer(buyer))
      .expect(200);
    expect(standing.body).toMatchObject({ state: 'WAITING', position: Number(place) });
    expect(Number(place)).toBe(1);

    await operator(goodsId, 'resume');
    await seen('queue-state', 'ADMITTED', 'the buyer admitted');
    await waitFor(async () => !(await page.getByTestId('buy').isDisabled()), {
      what: 'the buy button enabled once admitted',
    });
    await page.getByTestId('buy').click();
    await seen('result-status', 'SUCCESS', 'the result pushed to the page');
    const orderNo = await text('order-no');
    const result = await purchaseResult(t.http, goodsId, buyer);
    expect(result).toMatchObject({ status: 'SUCCESS', orderNo });
    await seen('queue-state', 'PURCHASED', 'the standing after the purchase');
    await tab.screenshot('buyer-page.png');

    // The token left the address bar at once and went only in headers; the page solved the
    // challenge for the join and for the purchase token itself, and sent them.
    expect(page.url()).toBe(`${base}/sale/${goodsId}`);
    expect(tab.requested.filter((request) => request.url.includes(buyerToken))).toEqual([]);
    const api = tab.requested.filter((request) => request.url.includes('/api/v1/seckill/'));
    expect(api.length).toBeGreaterThan(0);
    for (const request of api) expect(request.headers.authorization).toBe(`Bearer ${buyerToken}`);
    const joined = api.find((r) => r.method === 'POST' && r.url.endsWith('/queue'));
    expect(joined?.headers['x-seckill-challenge']).toMatch(/^[A-Za-z0-9+/=]+$/);
    const issued = api.find((r) => r.url.endsWith(`/seckill/${goodsId}/token`));
    expect(issued?.headers['x-seckill-challenge']).toMatch(/^[A-Za-z0-9+/=]+$/);
    const bought = api.find((r) => r.method === 'POST' && r.url.endsWith(`/seckill/${goodsId}`));
    expect(bought?.headers['x-seckill-token']).toBeTruthy();
    expect(bought?.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    // Both streams were followed: the standing and the result were pushed, not polled.
    expect(api.some((r) => r.url.endsWith('/queue/stream'))).toBe(true);
    expect(api.some((r) => r.url.endsWith('/result/stream'))).toBe(true);
    // No script error and no Content-Security-Policy violation.
    expect(tab.complaints).toEqual([]);
  });

  it('should let a buyer enter a draw sale, show the entry drawn with its right, and buy with it from the start', async () => {
    const goodsId = await createSale(t.http, {
      stock: 1,
      startsInMs: 6_000,
      draw: { closesInMs: 4_000, claimSeconds: 60 },
    });
    const buyer = 71_051;
    const buyerToken = token(buyer);
    await page.goto(`${await t.app.getUrl()}/sale/${goodsId}#token=${buyerToken}`);
    await seen('queue-state', 'NOT_ENTERED', 'the page knows the buyer has not entered');
    expect(await text('countdown')).toMatch(/^Entries close in \d+:\d\d, the sale starts in/);
    await waitFor(async () => !(await page.getByTestId('queue-join').isDisabled()), {
      what: 'the enter button enabled',
    });
    expect(await page.getByTestId('queue-join').textContent()).toContain('Enter the draw');
    await page.getByTestId('queue-join').click();
    await seen('queue-state', 'ENTERED', 'the buyer in the draw');
    await seen('queue-receipt', /^Your receipt: entry 0, pseudonym [0-9a-f]{16}…/, 'the receipt');

    // Drawn at the close (pushed by the entry stream): the one unit's right, buyable at the start.
    await seen('queue-state', 'SELECTED', 'the right pushed after the draw');
    expect(await text('queue-eta')).toMatch(/^until /);
    await waitFor(async () => !(await page.getByTestId('buy').isDisabled()), {
      what: 'the buy button enabled at the start',
    });
    await page.getByTestId('buy').click();
    await seen('result-status', 'SUCCESS', 'the result pushed to the page');
    await seen('queue-state', 'PURCHASED', 'the entry after the purchase');
    const api = tab.requested.filter((r) => r.url.includes(`/api/v1/seckill/${goodsId}`));
    expect(api.some((r) => r.method === 'POST' && r.url.endsWith('/entry'))).toBe(true);
    expect(api.some((r) => r.url.endsWith('/entry/stream'))).toBe(true);
    expect(tab.complaints).toEqual([]);
  });

  it('should sell an open sale from its start through the buy button, and tell a later buyer it is sold out', async () => {
    const goodsId = await createSale(t.http, { stock: 1, startsInMs: 3_000 });
    const base = await t.app.getUrl();
    // The token through the page's field this time (the tab keeps the last one: sign out first).
    await page.goto(`${base}/sale/${goodsId}`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Your token').fill(`Bearer ${token(71_101)}`);
    await page.getByRole('button', { name: 'Continue' }).click();
    await seen('result-status', 'NONE', 'the page signed in');
    expect(await page.locator('#queue').isHidden()).toBe(true);
    expect(await page.getByTestId('buy').isDisabled()).toBe(true);
    await waitFor(async () => !(await page.getByTestId('buy').isDisabled()), {
      timeoutMs: 10_000,
      what: 'the buy button enabled at the start',
    });
    await page.getByTestId('buy').click();
    await seen('result-status', 'SUCCESS', 'the first buyer served');
    expect(await text('order-no')).toBe((await purchaseResult(t.http, goodsId, 71_101)).orderNo);

    await page.goto(`${base}/sale/${goodsId}#token=${token(71_102)}`);
    await seen('countdown', 'Sold out', 'the sold-out sale');
    expect(await text('goods-status')).toBe('SOLD_OUT');
    expect(await page.getByTestId('buy').isDisabled()).toBe(true);
    expect(await text('result-status')).toBe('NONE');
    expect(tab.complaints).toEqual([]);
  });

  it('should show the ETA as "reconnecting" while the shop is out of reach, and clear the banner on the first answer after', async () => {
    const goodsId = await pausedQueueSale();
    // The browser reaches the app through a proxy the test cuts: the shop goes down, then back.
    const app = new URL(await t.app.getUrl());
    const proxy = await TcpProxy.start(app.hostname, Number(app.port));
    try {
      await page.goto(`http://127.0.0.1:${proxy.port}/sale/${goodsId}#token=${token(71_301)}`);
      await joinOnPage();
      const place = await seen('queue-position', /^\d+$/, 'a place');
      // Paused, this server says "now" for the first in line, a later one "unknown": either will do.
      const eta = /^(now|unknown|about \d+:\d\d)$/;
      await seen('queue-eta', eta, 'an ETA while the stream is live');
      expect(await banner().isHidden()).toBe(true);

      proxy.down();
      await seen('queue-eta', 'reconnecting…', 'the ETA while the shop is out of reach');
      await waitFor(
        async () =>
          (await banner().isVisible()) &&
          /^The shop cannot be reached \(.+\): reconnecting…$/.test(
            (await banner().textContent()) ?? '',
          ),
        { what: 'the banner while the shop is out of reach' },
      );
      // The standing is kept while it cannot be read: the place is the last one pushed.
      expect(await text('queue-state')).toBe('WAITING');
      expect(await text('queue-position')).toBe(place);

      proxy.up();
      // The stream's first answer after the outage, not the goods refresh 10 s later, clears it.
      await seen('queue-eta', eta, 'the ETA pushed again once the shop is back');
      expect(await banner().isHidden()).toBe(true);
      expect(await text('queue-position')).toBe(place);
    } finally {
      proxy.up();
      await proxy.close();
    }
  });

  it('should drop a token the shop refuses as too large or malformed, and show the sign-in form with the reason', async () => {
    const goodsId = await pausedQueueSale();
    const base = await t.app.getUrl();
    const stored = () => page.evaluate("sessionStorage.getItem('seckill.buyerToken')");
    const refusedWith = async (reason: RegExp, what: string) => {
      await waitFor(
        async () =>
          (await page.locator('#login').isVisible()) &&
          reason.test((await page.locator('#login-message').textContent()) ?? ''),
        { what },
      );
      expect(await stored()).toBeNull();
      // Nothing of the refused buyer is left on the page: no waiting room, no stale message.
      expect(await page.locator('#queue').isHidden()).toBe(true);
      expect(await page.locator('#purchase').isHidden()).toBe(true);
      expect(await page.locator('#queue-note').textContent()).toBe('');
      expect(await page.getByRole('button', { name: 'Sign out' }).isHidden()).toBe(true);
    };
    tab.complaints.length = 0;

    // Correctly signed, but a header block over the server's limit: answered 431.
    const oversized = token(71_401, { claims: { pad: 'x'.repeat(15_000) } });
    expect(oversized.length).toBeGreaterThan(20_000);
    await page.goto(`${base}/sale/${goodsId}#token=${oversized}`);
    await refusedWith(
      /^Your token was refused: it is too large for the shop to take \(20,\d{3} characters\) \[HEADERS_TOO_LARGE\]/,
      'the oversized token refused',
    );
    const sentOversized = tab.requested.filter(
      (request) => request.headers.authorization === `Bearer ${oversized}`,
    );
    expect(sentOversized.length).toBeGreaterThan(0);

    // Not a JWT: answered 401.
    await page.goto(`${base}/sale/${goodsId}#token=not-a-token`);
    await refusedWith(
      /^Your token was refused: .+ \[UNAUTHORIZED\]/,
      'the malformed token refused',
    );

    // A line break cannot go in a header at all: refused by the page before anything is sent.
    await page.goto(`${base}/sale/${goodsId}#token=abc%0Adef`);
    await refusedWith(/^Your token cannot be sent/, 'the unsendable token refused');

    // The form works again after a refusal: a good token signs the buyer in.
    await page.getByLabel('Your token').fill(token(71_402));
    await page.getByRole('button', { name: 'Continue' }).click();
    await seen('queue-state', 'NOT_JOINED', 'the buyer signed in after the refusals');
    expect(await page.locator('#login').isHidden()).toBe(true);
    // The oversized token was sent by the first reads only, never again after its refusal.
    expect(
      tab.requested.filter((request) => request.headers.authorization === `Bearer ${oversized}`),
    ).toHaveLength(sentOversized.length);
    // Only the browser's own lines for the refusals, no script error of the page.
    for (const complaint of tab.complaints) expect(complaint).toMatch(/status of (431|401)/);
  });

  it('should say the expected wait is unknown when a waiting standing has no ETA (admissions paused)', async () => {
    const goodsId = await pausedQueueSale();
    const buyer = 71_501;
    const base = await t.app.getUrl();
    // The contract lets a paused sale's standing say etaSeconds: null. Where this server still
    // gives a number, the page is pushed the server's own standing with that one field null;
    // where it gives null, the real stream goes through.
    await page.route(`**/api/v1/seckill/${goodsId}/queue/stream`, async (route) => {
      const standing = await standingOf(goodsId, buyer);
      if (standing.etaSeconds === null) return route.continue();
      await route.fulfill({
        status: 200,
        contentType: 'text/event-stream',
        body: `data: ${JSON.stringify({ ...standing, etaSeconds: null })}\n\n`,
      });
    });
    try {
      await page.goto(`${base}/sale/${goodsId}#token=${token(buyer)}`);
      await joinOnPage();
      // With the place drawn: "unknown", though the buyer's place is known.
      await seen('queue-position', /^\d+$/, 'a place');
      await seen('queue-eta', 'unknown', 'the ETA of a standing without one');
      expect(await text('queue-state')).toBe('WAITING');
    } finally {
      await page.unroute(`**/api/v1/seckill/${goodsId}/queue/stream`);
    }
  });

  it('should keep following the standing through a SOLD_OUT that is not final, and call it sold out for good once final', async () => {
    const goodsId = await pausedQueueSale();
    const base = await t.app.getUrl();
    // The contract's `final`: SOLD_OUT with final false while units may still come back from
    // unpaid orders. This server does not say it yet, so the stream pushes the page what one
    // that does would: each connection gets `pushed`, then ends, and the page reconnects.
    let pushed: Record<string, unknown> = {
      state: 'SOLD_OUT',
      position: null,
      ahead: null,
      etaSeconds: null,
      final: false,
    };
    let streams = 0;
    const stream = `**/api/v1/seckill/${goodsId}/queue/stream`;
    await page.route(stream, async (route) => {
      streams += 1;
      await route.fulfill({
        status: 200,
        contentType: 'text/event-stream',
        body: `data: ${JSON.stringify(pushed)}\n\n`,
      });
    });
    try {
      await page.goto(`${base}/sale/${goodsId}#token=${token(71_601)}`);
      // Joined (WAITING), then at once the pushed standing.
      await joinOnPage('SOLD_OUT');
      await waitFor(
        async () =>
          /^Sold out for now: you stay in line/.test(
            (await page.locator('#queue-note').textContent()) ?? '',
          ),
        { what: 'the buyer told the sale is sold out for now' },
      );
      expect(await text('queue-state')).toBe('SOLD_OUT');
      expect(await text('queue-eta')).toBe('unknown');
      // Still in line: the page reads the stream again, and again.
      const seenAt = streams;
      await waitFor(async () => streams >= seenAt + 2, {
        what: 'the stream followed after a SOLD_OUT that is not final',
      });

      pushed = { ...pushed, final: true };
      await waitFor(
        async () =>
          /^Sold out for good/.test((await page.locator('#queue-note').textContent()) ?? ''),
        { what: 'the buyer told the sale is sold out for good' },
      );
      expect(await page.getByTestId('queue-state').getAttribute('data-final')).toBe('true');
      expect(await text('queue-eta')).toBe('');
      expect(await page.getByTestId('buy').isDisabled()).toBe(true);
    } finally {
      await page.unroute(stream);
    }
  });

  it('should show the waiting room as restoring on a 503 with Retry-After, and read the standing again when told', async () => {
    const goodsId = await pausedQueueSale();
    const base = await t.app.getUrl();
    // The contract's answer while the waiting room is restored after a Redis loss: the first
    // read of the standing gets it, the next ones go to the server.
    let refused = 0;
    const standing = `**/api/v1/seckill/${goodsId}/queue`;
    await page.route(standing, async (route) => {
      if (route.request().method() !== 'GET' || refused > 0) return route.continue();
      refused += 1;
      await route.fulfill({
        status: 503,
        contentType: 'application/json',
        headers: { 'Retry-After': '1' },
        body: JSON.stringify({
          statusCode: 503,
          code: 'UNAVAILABLE',
          message: 'The waiting room is being restored',
        }),
      });
    });
    try {
      tab.complaints.length = 0;
      await page.goto(`${base}/sale/${goodsId}#token=${token(71_701)}`);
      await seen('queue-eta', 'restoring…', 'the ETA while the waiting room is restored');
      const restoringSeen = Date.now();
      expect(await page.locator('#queue-note').textContent()).toMatch(
        /^The waiting room is being restored: your place is kept/,
      );
      expect(await banner().isHidden()).toBe(true);
      // Read again after Retry-After (1 s), not at the next 10 s refresh.
      await seen('queue-state', 'NOT_JOINED', 'the standing read again after Retry-After');
      expect(Date.now() - restoringSeen).toBeLessThan(5_000);
      expect(await text('queue-eta')).toBe('');
      expect(await page.locator('#queue-note').textContent()).toBe('Join to get your place.');
      expect(tab.complaints).toEqual([expect.stringMatching(/status of 503/)]);
    } finally {
      await page.unroute(standing);
    }
  });

  it('should say there is no such sale for an unknown goods, and answer 400 for a goods id that is not one', async () => {
    const base = await t.app.getUrl();
    tab.complaints.length = 0;
    await page.goto(`${base}/sale/987654321#token=${token(71_201)}`);
    await waitFor(
      async () => /no such sale/.test((await page.locator('#goods-problem').textContent()) ?? ''),
      { what: 'the unknown sale explained' },
    );
    expect(await page.getByTestId('buy').isVisible()).toBe(false);

    const refused = await t.http.get('/sale/abc').expect(400);
    expect(refused.body).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    const served = await t.http.get('/sale/12').expect(200);
    expect(served.headers['content-type']).toMatch(/^text\/html/);
    expect(served.headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect(served.text).toContain('data-challenge-required="true"');
    // The browser logs the goods answer's 404 itself; the page adds no error of its own.
    expect(tab.complaints).toEqual([expect.stringMatching(/status of 404/)]);
  });
});
