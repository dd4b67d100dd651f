// For reviewers: renders a gatehouse-audit HTML report in headless Chromium and saves a PNG.
//   node packages/audit/scripts/report-screenshot.mjs report.html report.png
// Uses Debian's Chromium (/usr/bin/chromium, or CHROMIUM_PATH).
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { chromium } from 'playwright-core';

const [html, png = 'audit-report.png'] = process.argv.slice(2);
if (!html) {
  console.error('usage: report-screenshot.mjs REPORT.html [OUT.png]');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
await page.goto(pathToFileURL(resolve(html)).href);
await page.screenshot({ path: png, fullPage: true });
await browser.close();
console.log(`wrote ${png}`);
