/**
 * The audit trail as an attack surface: what callers put in records, and what a tampered log
 * holds, must never break the reader, move a record out of sight, or act on the reader's
 * terminal or browser.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog, fileSink } from '../src/index.js';
import type { AuditEntry, AuditRecord } from '../src/index.js';
import { launch, openReport } from './browser.js';
import {
  SERVICE,
  callEntry,
  cli,
  lifecycleEntry,
  readJsonLines,
  rehash,
  tempDir,
  writeJsonLines,
} from './helpers.js';

/** Everything a terminal acts on: C0 but newline, DEL, C1, bidi controls, line separators. */
/* eslint-disable no-control-regex -- matching controls is the point */
const ACTIVE =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
/* eslint-enable no-control-regex */

const PAINT = '\r\u001b[2K\u001b[1A\u001b[2Kintact: 3 records in 1 chain(s)\u009b2K';
const HOSTILE = {
  line: 'line\u2028sep\u2029para\u0085next',
  terminal: `ansi\u001b[31mred\u0007${PAINT}`,
  bidi: 'file\u202etxt.exe\u2066x\u2069',
  html: '</code><style>[data-integrity]{display:none}</style><meta http-equiv="refresh" content="0;url=https://evil.example/">',
};

/** A closed log whose calls carry `values` in the fields callers choose. */
function hostileLog(values: readonly string[]): string {
  const path = join(tempDir(), 'audit.jsonl');
  const log = new AuditLog({
    sinks: [fileSink({ path, maxBytes: 1 << 30, daily: false })],
    service: SERVICE,
    checkpointEvery: 1000,
  });
  log.append(lifecycleEntry('gatehouse/start', new Date(Date.UTC(2026, 10, 29, 7, 59))));
  values.forEach((value, i) => {
    const entry = callEntry(i) as AuditEntry & { user: { id: string } };
    entry.user.id = `user ${value}`;
    entry.mcp!.name = `tool ${value}`;
    entry.target = { resource: `github:acme/${value}` };
    entry.client = { name: value, version: value };
    entry.error = { type: 'ToolError', message: value };
    log.append(entry);
  });
  log.append(lifecycleEntry('gatehouse/stop', new Date(Date.UTC(2026, 10, 29, 23, 0))));
  log.close();
  return path;
}

describe('line terminators inside a record', () => {
  it('are written escaped, and a log of them reads whole and intact', async () => {
    const path = hostileLog([HOSTILE.line]);
    const raw = readFileSync(path, 'utf8');
    expect(raw).not.toMatch(/[\u2028\u2029\u0085]/);
    expect(raw).toContain('\\u2028');
    expect((await cli('verify', path)).out).toMatch(/^intact: 4 records/);
    const listed = await cli('query', '--format', 'json', path);
    const names = listed.out
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as AuditRecord).mcp?.name);
    expect(names).toEqual([`tool ${HOSTILE.line}`]);
  });

  it('read from a log that holds them raw (an older writer), split on \\n only', async () => {
    const path = hostileLog([HOSTILE.line]);
    // The same records with the separators unescaped: the same JSON values, the same hashes.
    writeFileSync(
      path,
      readFileSync(path, 'utf8').replace(/\\u(2028|2029|0085)/g, (_, h: string) =>
        String.fromCharCode(parseInt(h, 16)),
      ),
    );
    expect(readFileSync(path, 'utf8')).toMatch(/\u2028/);
    expect((await cli('verify', path)).out).toMatch(/^intact: 4 records/);
    const table = await cli('query', path);
    expect(table.out.trim().split('\n')).toHaveLength(1);
    expect(table.out).toContain('tool line\\u{2028}sep\\u{2029}para\\u{85}next');
  });
});

describe('what the CLI prints', () => {
  const forms = [
    ['verify'],
    ['verify', '--json'],
    ['query'],
    ['query', '--format', 'json'],
    ['export', '--format', 'csv'],
    ['export', '--format', 'jsonl'],
    ['export', '--format', 'ocsf'],
  ];

  it.each(forms)('is inert from a genuine log with hostile values: %s %s %s', async (...argv) => {
    const path = hostileLog(Object.values(HOSTILE));
    const { code, out } = await cli(...argv, path);
    expect(code).toBe(0);
    expect(out).not.toMatch(ACTIVE);
    if (argv[0] !== 'verify') expect(out).toContain('\\u');
  });

  it.each(forms)('is inert from a tampered log: %s %s %s', async (...argv) => {
    const path = hostileLog(['plain']);
    const records = readJsonLines(path);
    // A careful attacker: the value changed and the hash recomputed, so the chain breaks at
    // the next record, whose damage message and fields are printed.
    records[1]!.user!.id = `mallory${PAINT}`;
    records[1]!.mcp!.name = HOSTILE.bidi + HOSTILE.terminal;
    rehash(records[1]!);
    writeJsonLines(path, records);
    const { code, out } = await cli(...argv, path);
    expect(out).not.toMatch(ACTIVE);
    if (argv[0] === 'verify') {
      expect(code).toBe(1);
      expect(out).toContain(argv[1] === '--json' ? '"intact": false' : 'DAMAGED');
    }
  });

  it('names a record whose members have the wrong types as damage, instead of crashing', async () => {
    const path = hostileLog(['plain', 'plain']);
    const records = readJsonLines(path) as unknown as Array<Record<string, any>>;
    records[1]!.audit.seq = `<style>${PAINT}`;
    records[2]!.event = 'gone';
    writeJsonLines(path, records);
    const verify = await cli('verify', path);
    expect(verify.code).toBe(1);
    expect(verify.out).toContain(
      'DAMAGED (modified) at ' +
        `${path}:2: the line is not a well-formed audit record any more (audit.seq is missing or of the wrong type)`,
    );
    expect(verify.out).not.toMatch(ACTIVE);
    // Readers skip it like a line that is not a record; they do not crash on the other one.
    const query = await cli('query', path);
    expect(query.code).toBe(0);
    expect(query.out.trim().split('\n')).toHaveLength(1);
  });
});

describe('the HTML report in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });

  // Long enough for a refresh or a navigation to have happened.
  const open = (html: string) => openReport(browser, html, 1_500);

  /** What an injection would change: the page stays where it is and as we wrote it. */
  async function expectUntouched(html: string, integrity: 'intact' | 'damaged') {
    const { page, requests } = await open(html);
    expect(page.url()).toBe(pathToFileURL(html).href);
    expect(requests).toEqual([]);
    expect(await page.$$eval('style', (s) => s.length)).toBe(1);
    expect(await page.$$eval('meta[http-equiv]', (m) => m.map((e) => e.outerHTML))).toEqual([
      expect.stringContaining('Content-Security-Policy'),
    ]);
    expect(await page.$$('[style]')).toHaveLength(0);
    const banner = page.locator(`[data-integrity="${integrity}"]`);
    expect(await banner.isVisible()).toBe(true);
    // The stylesheet applies (the CSP admits it by its hash): the banner has its colour.
    expect(await banner.evaluate((e) => getComputedStyle(e).borderTopStyle)).toBe('solid');
    await page.close();
  }

  it('shows hostile values from a genuine log as text', async () => {
    const path = hostileLog(Object.values(HOSTILE));
    const html = join(tempDir(), 'report.html');
    expect((await cli('report', '--out', html, path)).code).toBe(0);
    await expectUntouched(html, 'intact');
    expect(readFileSync(html, 'utf8')).toContain('&#60;meta http-equiv');
  });

  it('keeps the damage banner of a tampered log in sight, whatever the log injects', async () => {
    const path = hostileLog(['plain', 'plain', 'plain']);
    const records = readJsonLines(path) as unknown as Array<Record<string, any>>;
    records[1]!.mcp.name = HOSTILE.html;
    records[1]!.user.id = HOSTILE.html;
    records[2]!.audit.seq = HOSTILE.html;
    records[3]!.audit.checkpoint = { covers: { seq: HOSTILE.html } };
    rehash(records[1] as AuditRecord);
    writeJsonLines(path, records);
    const html = join(tempDir(), 'report.html');
    expect((await cli('report', '--out', html, path)).code).toBe(1);
    await expectUntouched(html, 'damaged');
  });

  it('admits no style but its own: the CSP refuses an injected one', async () => {
    const path = hostileLog(['plain']);
    const html = join(tempDir(), 'report.html');
    await cli('report', '--out', html, path);
    // Plant what escaping keeps out, as if it had got through: the policy still holds.
    const page = readFileSync(html, 'utf8').replace(
      '</body>',
      '<style>[data-integrity]{display:none}</style><p id="x" style="display:none">x</p></body>',
    );
    writeFileSync(html, page);
    const { page: tab } = await open(html);
    expect(await tab.locator('[data-integrity]').isVisible()).toBe(true);
    expect(await tab.locator('#x').isVisible()).toBe(true);
    await tab.close();
  });
});

describe('the writer’s last word (the `scrub` option)', () => {
  it('reaches every string and key of a record before it is sealed, and the log verifies', async () => {
    const path = join(tempDir(), 'audit.jsonl');
    const secret = 'operator-secret-value-42';
    const log = new AuditLog({
      sinks: [fileSink({ path, maxBytes: 1 << 30, daily: false })],
      service: SERVICE,
      scrub: (text) => text.replaceAll(secret, '[REDACTED]'),
    });
    const entry = callEntry(0) as AuditEntry & { user: { id: string } };
    entry.user.id = `user ${secret}`;
    entry.client = { name: secret, version: '1' };
    entry.error = { type: 'ToolError', message: `upstream said ${secret}` };
    (entry as unknown as { labels: Record<string, string[]> }).labels = { [secret]: [secret] };
    log.append(lifecycleEntry('gatehouse/start', new Date(Date.UTC(2026, 10, 29, 7, 59))));
    log.append(entry);
    log.append(lifecycleEntry('gatehouse/stop', new Date(Date.UTC(2026, 10, 29, 23, 0))));
    log.close();
    const raw = readFileSync(path, 'utf8');
    expect(raw).not.toContain(secret);
    expect(raw.split('[REDACTED]').length - 1).toBe(5);
    expect((await cli('verify', path)).out).toMatch(/^intact: 4 records/);
  });
});
