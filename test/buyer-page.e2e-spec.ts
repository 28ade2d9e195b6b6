import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserTab, type BrowserTab } from './support/browser.js';
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
