import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserTab, type BrowserTab, type SeenRequest } from './support/browser.js';
import {
  createSale,
  doubleClickCrowd,
  token,
  useApp,
  waitFor,
  waitForSettled,
} from './support/harness.js';

/**
 * The operator dashboard in a real browser: headless Chromium driven by playwright-core opens
 * /dashboard with an admin token in the address, and the page must show the sale's figures.
 */
describe('the dashboard in a browser', () => {
  const t = useApp({ TRUSTED_PROXIES: '127.0.0.1' });
  let tab: BrowserTab;
  let page: Page;
  let requested: SeenRequest[];
  let complaints: string[];

  beforeAll(async () => {
    tab = await openBrowserTab();
    ({ page, requested, complaints } = tab);
  });
  afterAll(async () => {
    await tab?.browser.close();
  });

  const text = (testId: string) => tab.text(testId);

  it('should show the right sold and remaining figures and a consistent reconcile after a crowd, the token never in a URL', async () => {
    const stock = 25;
    const goodsId = await createSale(t.http, { stock });
    const users = Array.from({ length: 120 }, (_, i) => 81_000 + i);
    const responses = await doubleClickCrowd([t.http], goodsId, users);
    expect(responses.filter((response) => response.status === 202)).toHaveLength(stock);
    await waitForSettled(t.stores, goodsId);

    const admin = token(1, { admin: true });
    const base = await t.app.getUrl();
    await page.goto(`${base}/dashboard#token=${admin}`);

    await waitFor(
      async () =>
        (await text(`sale-${goodsId}-remaining`).catch(() => null)) === '0' &&
        (await text(`sale-${goodsId}-sold`)) === String(stock) &&
        (await text(`sale-${goodsId}-consistent`)) === 'yes',
      { timeoutMs: 30_000, intervalMs: 200, what: `sale ${goodsId}: 0 left, ${stock} sold, yes` },
    );
    await tab.screenshot('dashboard.png');

    // The token left the address bar at once, stayed in this tab, and went only in headers.
    expect(page.url()).toBe(`${base}/dashboard`);
    // The callback runs in the page (a string, since this project's types have no DOM).
    expect(await page.evaluate("sessionStorage.getItem('seckill.adminToken')")).toBe(admin);
    expect(requested.filter((request) => request.url.includes(admin))).toEqual([]);
    const feed = requested.find((request) => request.url.endsWith('/api/v1/admin/events'));
    expect(feed?.headers.authorization).toBe(`Bearer ${admin}`);
    // No script error and no Content-Security-Policy violation.
    expect(complaints).toEqual([]);
  });

  it('should preheat and create sales with its buttons, through the admin routes', async () => {
    const goodsId = await createSale(t.http, { stock: 7 });
    await waitFor(() => text(`sale-${goodsId}-remaining`).catch(() => null), {
      what: `sale ${goodsId} on the page`,
    });
    const card = page.getByTestId(`sale-${goodsId}`);
    await card.getByRole('button', { name: 'Preheat' }).click();
    await waitFor(async () => /already held/.test((await card.textContent()) ?? ''), {
      what: 'the preheat answer on the card',
    });

    const name = `Browser-made sale ${Date.now()}`;
    await page.getByText('Create a sale').click();
    await page.getByLabel('Name').fill(name);
    await page.getByLabel('Stock').fill('3');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const created = await waitFor(
      async () =>
        /created and preheated sale #(\d+)/.exec(
          (await page.locator('#create-result').textContent()) ?? '',
        )?.[1],
      { what: 'the created sale' },
    );
    await waitFor(
      async () =>
        (await text(`sale-${created}-remaining`).catch(() => null)) === '3' &&
        (await page.getByTestId(`sale-${created}`).textContent())?.includes(name),
      { what: `sale ${created} on the page with 3 left` },
    );
    expect(complaints).toEqual([]);
  });

  it("should show a queue sale's waiting room and pause, resume and re-pace it with its controls", async () => {
    const goodsId = await createSale(t.http, {
      stock: 1,
      startsInMs: 1_000,
      queue: { admitPerSecond: 50, admissionTtlSeconds: 60 },
    });
    for (const userId of [82_001, 82_002, 82_003]) {
      await t.http
        .post(`/api/v1/seckill/${goodsId}/queue`)
        .set('Authorization', `Bearer ${token(userId)}`)
        .expect(200);
    }
    // Stock 1 × QUEUE_ADMIT_STOCK_FACTOR 1: one admitted, two waiting.
    await waitFor(
      async () =>
        (await text(`sale-${goodsId}-queue-admitted`).catch(() => null)) === '1' &&
        (await text(`sale-${goodsId}-queue-waiting`)) === '2',
      { timeoutMs: 30_000, intervalMs: 200, what: 'the waiting room on the card' },
    );
    const card = page.getByTestId(`sale-${goodsId}`);
    const paused = async () =>
      Number(
        (
          (await t.stores.mysql.query(
            'SELECT admission_paused AS p FROM seckill_goods WHERE id = ?',
            [goodsId],
          )) as unknown as [{ p: number }[]]
        )[0][0].p,
      );

    await page.getByTestId(`sale-${goodsId}-queue-toggle`).click();
    await waitFor(async () => /admission paused/.test((await card.textContent()) ?? ''), {
      what: 'the pause answered',
    });
    expect(await paused()).toBe(1);
    await waitFor(async () => (await card.textContent())?.includes('Resume admission'), {
      what: 'the button to offer the resume',
    });
    await page.getByTestId(`sale-${goodsId}-queue-toggle`).click();
    await waitFor(async () => /admission resumed/.test((await card.textContent()) ?? ''), {
      what: 'the resume answered',
    });
    expect(await paused()).toBe(0);

    await card.getByLabel('admit per second').fill('7');
    await card.getByRole('button', { name: 'Re-pace' }).click();
    await waitFor(
      async () => /admitting at most 7 a second/.test((await card.textContent()) ?? ''),
      {
        what: 'the new pace answered',
      },
    );
    const view = await t.http.get(`/api/v1/goods/${goodsId}`).expect(200);
    expect(view.body.admitPerSecond).toBe(7);
    expect(complaints).toEqual([]);
  });
});
