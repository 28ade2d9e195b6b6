import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's package (`apt-get install chromium`); .ci/run installs it when it is missing. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

export interface SeenRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
}

/** A headless Chromium tab, with every request it made and every script or policy complaint. */
export interface BrowserTab {
  browser: Browser;
  page: Page;
  requested: SeenRequest[];
  complaints: string[];
  /** The element's text (playwright's testid lookup), failing after a second. */
  text(testId: string): Promise<string | null>;
  /** A full-page screenshot in test-artifacts/ (git-ignored). */
  screenshot(name: string): Promise<void>;
}

export async function openBrowserTab(): Promise<BrowserTab> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: install Debian's package (sudo apt-get install -y chromium; ` +
        '.ci/run does it when it is missing) or point CHROMIUM_PATH at a Chromium binary.',
    );
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requested: SeenRequest[] = [];
  const complaints: string[] = [];
  page.on('request', (request) =>
    requested.push({ url: request.url(), method: request.method(), headers: request.headers() }),
  );
  page.on('console', (message) => {
    // A missing favicon is the browser's business, not the page's.
    if (message.type() === 'error' && !/favicon/.test(message.location().url)) {
      complaints.push(message.text());
    }
  });
  page.on('pageerror', (error) => complaints.push(error.message));
  return {
    browser,
    page,
    requested,
    complaints,
    text: (testId) => page.getByTestId(testId).textContent({ timeout: 1_000 }),
    screenshot: async (name) => {
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}${name}`, fullPage: true });
    },
  };
}
