import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';

/** Debian's Chromium (the `chromium` package); CHROMIUM_PATH overrides. */

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless Chromium with nothing that phones home, as root-safe as the machine needs. */
export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/**
 * Opens a report file in a new page and records every request that leaves it. `settleMs`: how
 * long to stay, for a refresh or a navigation to have had time to happen.
 */
export async function openReport(
  browser: Browser,
  html: string,
  settleMs = 0,
): Promise<{ page: Page; requests: string[] }> {
  const page = await browser.newPage();
  const requests: string[] = [];
  page.on('request', (r) => {
    if (r.url() !== pathToFileURL(html).href) requests.push(r.url());
  });
  await page.goto(pathToFileURL(html).href);
  if (settleMs > 0) await page.waitForTimeout(settleMs);
  return { page, requests };
}
