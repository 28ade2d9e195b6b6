// `--screenshot <file>`: the operator dashboard in headless Chromium (Debian's, driven by
// playwright-core) once the demo's sale has sold, its accepted purchases are in the chart and its
// reconcile verdict is in: the README's picture (docs/dashboard.png) is taken this way.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WAIT_MS = 30_000;

/**
 * Opens /dashboard with the admin token (in the fragment, which the page takes out of the
 * address), waits until the sale shows `sold` units sold, a consistent verdict and a chart with
 * its accepted purchases, and saves a screenshot. Never fails the demo: says why it took none.
 */
export async function screenshotDashboard(options: {
  baseUrl: string;
  adminToken: string;
  goodsId: number;
  sold: number;
  /** Epoch ms before which no screenshot is taken (the burst then sits inside the chart). */
  notBefore: number;
  path: string;
}): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    console.log(`screenshot: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium)`);
    return;
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
    await page.goto(`${options.baseUrl}/dashboard#token=${options.adminToken}`);
    const id = options.goodsId;
    const text = (testId: string) =>
      page
        .getByTestId(testId)
        .textContent({ timeout: 500 })
        .catch(() => null);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const card = page.getByTestId(`sale-${id}`);
      const ready =
        (await text(`sale-${id}-sold`)) === String(options.sold) &&
        (await text(`sale-${id}-consistent`)) === 'yes' &&
        // Every accepted purchase is in the chart (its seconds reach it two seconds late).
        (
          (await card
            .locator('.totals')
            .textContent({ timeout: 500 })
            .catch(() => null)) ?? ''
        )
          .replace(/,/g, '')
          .includes(`accepted ${options.sold}`) &&
        (await card.locator('canvas').count()) > 0 &&
        Date.now() >= options.notBefore;
      if (ready) break;
      if (Date.now() > deadline) {
        console.log(`screenshot: the dashboard did not show the sale within ${WAIT_MS / 1000} s`);
        return;
      }
      await sleep(200);
    }
    mkdirSync(dirname(options.path), { recursive: true });
    await page.screenshot({ path: options.path });
    console.log(`screenshot: ${options.path}`);
  } finally {
    await browser.close();
  }
}
