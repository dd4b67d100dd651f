import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openReport } from './browser.js';
import { createPublicKey, randomUUID } from 'node:crypto';
import { keyIdOf } from '../src/chain.js';
import { AuditLog, ReportBuilder, fileSink, loadSigner } from '../src/index.js';
import type { AuditEntry, AuditRecord, VerifyReport } from '../src/index.js';
import {
  SERVICE,
  callEntry,
  cli,
  keyPair,
  readJsonLines,
  tempDir,
  writeJsonLines,
  writeLog,
} from './helpers.js';

let browser: Browser;
beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

const open = (html: string) => openReport(browser, html);

/** The event of a lifecycle or security record. */
const event = (action: string, reason: string, outcome: 'success' | 'failure') => ({
  id: randomUUID(),
  kind: 'event' as const,
  category: ['process' as const],
  type: ['info' as const],
  action: action as 'gatehouse/start',
  outcome,
  reason: reason as 'started',
});

describe('gatehouse-audit report in headless Chromium', () => {
  it('renders a self-contained page whose charts carry the log’s numbers', async () => {
    const { privatePem, publicPem } = keyPair();
    const path = writeLog({ calls: 120, signerPem: privatePem });
    const dir = tempDir();
    const key = join(dir, 'pub.pem');
    writeFileSync(key, publicPem);
    const html = join(dir, 'report.html');
    const result = await cli(
      'report',
      '--out',
      html,
      '--key',
      key,
      '--title',
      'Weekly review',
      path,
    );
    expect(result.code).toBe(0);
    expect(readFileSync(html, 'utf8')).not.toMatch(/<script|https?:\/\/(?!gatehouse)/);

    const { page, requests } = await open(html);
    expect(await page.title()).toBe('Weekly review');
    expect(await page.getAttribute('[data-integrity]', 'data-integrity')).toBe('intact');
    expect(await page.textContent('[data-integrity]')).toContain(
      'Integrity: intact, signatures verified',
    );
    expect(await page.textContent('[data-kpi="calls"]')).toBe('120');
    // The time chart's bars add up to every call, split into successes and failures.
    const bars = await page.$$eval('[data-chart="calls-over-time"] rect', (rects) =>
      rects.map((r) => ({
        kind: r.getAttribute('data-kind'),
        value: Number(r.getAttribute('data-value')),
      })),
    );
    const sum = (kind: string) =>
      bars.filter((b) => b.kind === kind).reduce((a, b) => a + b.value, 0);
    expect(sum('success') + sum('failure')).toBe(120);
    expect(sum('failure')).toBe(60);
    // Two hours of calls, one a minute: a bar per minute, not two blocks of an hour.
    expect(await page.getAttribute('[data-chart="calls-over-time"]', 'data-step-minutes')).toBe(
      '1',
    );
    expect(await page.getAttribute('[data-chart="calls-over-time"]', 'data-bars')).toBe('120');
    // The banner names the key that verified the signatures.
    expect(await page.getAttribute('[data-integrity] [data-key-id]', 'data-key-id')).toBe(
      keyIdOf(createPublicKey(publicPem)),
    );
    // Each call counted once: what succeeded, what a rule denied, what failed otherwise.
    const kpi = async (name: string) => Number(await page.textContent(`[data-kpi="${name}"]`));
    expect([await kpi('succeeded'), await kpi('denied'), await kpi('errors')]).toEqual([
      60, 15, 45,
    ]);
    const outcomes = await page.$$eval('[data-chart="outcomes"] td[data-value]', (cells) =>
      cells.map((c) => Number(c.getAttribute('data-value'))),
    );
    expect(outcomes.reduce((a, b) => a + b, 0)).toBe(120);
    expect(await page.$$eval('[data-chart="principals"] tr', (rows) => rows.length)).toBe(3);
    expect(await page.$$eval('[data-table="writes"] tr', (rows) => rows.length)).toBe(1 + 35); // header + non-denied writes
    // Content from the log is text, never markup.
    expect(await page.$$('[data-table="failures"] b')).toHaveLength(0);
    expect(await page.textContent('[data-table="failures"]')).toContain('<b>');
    expect(requests).toEqual([]);
    await page.close();
  });

  it('puts damage on top, shows the whole log with the damage where it is, and exits 1', async () => {
    const path = writeLog({ calls: 30 });
    const records = readJsonLines(path);
    records[12]!.user!.id = 'mallory';
    writeJsonLines(path, records);
    const html = join(tempDir(), 'damaged.html');
    expect((await cli('report', '--out', html, path)).code).toBe(1);
    const { page, requests } = await open(html);
    expect(await page.getAttribute('[data-integrity]', 'data-integrity')).toBe('damaged');
    const banner = await page.textContent('[data-integrity]');
    expect(banner).toContain('DAMAGED — modified');
    expect(banner).toContain(`${path}:13`);
    // Every call is counted, not only those before the damage.
    expect(await page.textContent('[data-kpi="calls"]')).toBe('30');
    // The records from the damaged one on: start, 30 calls and stop, less the start and the
    // ten calls before it (checkpoints are not counted).
    expect(await page.getAttribute('[data-unverified]', 'data-unverified')).toBe('21');
    // The damage sits in the tables where it is; rows below it (later) are marked.
    const failures = await page.$$eval('[data-table="failures"] tr', (rows) =>
      rows.slice(1).map((r) => (r.classList.contains('damage') ? 'DAMAGE' : r.className)),
    );
    const at = failures.indexOf('DAMAGE');
    expect(at).toBeGreaterThan(0);
    expect(failures.slice(0, at).every((c) => c === 'unverified')).toBe(true);
    expect(failures.slice(at + 1).every((c) => c === '')).toBe(true);
    expect(requests).toEqual([]);
    await page.close();
  });

  it('shows lifecycle and security events in every report, whatever the filters', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.jsonl');
    const log = new AuditLog({
      sinks: [fileSink({ path, maxBytes: 1 << 30, daily: false })],
      service: SERVICE,
    });
    const at = new Date(Date.UTC(2026, 10, 29, 8, 0)).toISOString();
    log.append({ '@timestamp': at, event: event('gatehouse/start', 'started', 'success') });
    log.append({
      '@timestamp': at,
      event: event('gatehouse/security_override', 'security_override', 'success'),
      gatehouse: { setting: 'POSTGRES_ALLOW_PRIVILEGED_ROLE', findings: ['is a superuser'] },
    });
    for (let i = 0; i < 5; i++) log.append(callEntry(i));
    log.append({
      '@timestamp': at,
      event: event('gatehouse/stop', 'internal_error', 'failure'),
      gatehouse: { reason: 'crash', error: 'TypeError' },
    });
    log.close();
    const html = join(dir, 'report.html');
    // A filter that matches no call: the events are still there.
    expect((await cli('report', '--out', html, '--principal', 'nobody', path)).code).toBe(0);
    const { page } = await open(html);
    expect(await page.textContent('[data-kpi="calls"]')).toBe('0');
    expect(await page.textContent('[data-kpi="overrides"]')).toBe('1');
    expect(await page.getAttribute('[data-overrides]', 'data-overrides')).toBe('1');
    const events = await page.textContent('[data-table="lifecycle-events"]');
    expect(events).toContain('SECURITY CHECK OVERRIDDEN by POSTGRES_ALLOW_PRIVILEGED_ROLE');
    expect(events).toContain('crashed (TypeError)');
    expect(events).toContain('started');
    await page.close();
  });
});

describe('the time chart picks its step from the span', () => {
  const chart = (times: readonly number[]) => {
    const builder = new ReportBuilder();
    times.forEach((t, i) =>
      builder.add({ ...callEntry(i, new Date(t)), service: SERVICE } as unknown as AuditRecord),
    );
    const integrity = {
      intact: true,
      records: times.length,
      chains: 1,
      checkpoints: { total: 0, signed: 0, verified: 0, verifiedBy: {} },
      openTail: 0,
    } as unknown as VerifyReport;
    const html = builder.render({ integrity, sources: ['x'] });
    const svg =
      /<svg data-chart="calls-over-time" data-step-minutes="(\d+)" data-bars="(\d+)"/.exec(html)!;
    const values = [...html.matchAll(/data-value="(\d+)" data-kind/g)].map((m) => Number(m[1]));
    return { step: Number(svg[1]), bars: Number(svg[2]), total: values.reduce((a, b) => a + b, 0) };
  };
  const t0 = Date.UTC(2026, 10, 29, 8, 0, 0);

  it('minutes within an hour, empty minutes kept, every call counted', () => {
    expect(chart([t0, t0 + 60_000, t0 + 40 * 60_000])).toEqual({ step: 1, bars: 41, total: 3 });
  });

  it('hours over a few days, days over a quarter', () => {
    const days = (n: number) =>
      Array.from({ length: 50 }, (_, i) => t0 + (i * n * 86_400_000) / 49);
    expect(chart(days(3))).toMatchObject({ step: 60, total: 50 });
    expect(chart(days(90))).toMatchObject({ step: 1440, total: 50 });
    expect(chart(days(3)).bars).toBeLessThanOrEqual(120);
  });
});

describe('what to look at first', () => {
  /** A session with one of each kind of event a reviewer should see before any count. */
  function session(path: string, publicDir: string): string {
    const { privatePem, publicPem } = keyPair();
    writeFileSync(join(publicDir, 'pub.pem'), publicPem);
    const log = new AuditLog({
      sinks: [fileSink({ path, maxBytes: 1 << 30, daily: false })],
      service: SERVICE,
      signer: loadSigner(privatePem),
    });
    const at = (minute: number, second = 0) =>
      new Date(Date.UTC(2026, 10, 29, 9, minute, second)).toISOString();
    const call = (
      i: number,
      changes: Partial<AuditEntry> & { reason?: string; principal?: string },
    ): AuditEntry => {
      const base = callEntry(i, new Date(at(10 + Math.floor(i / 10), i % 60)));
      const reason = changes.reason ?? 'ok';
      return {
        ...base,
        event: {
          ...base.event,
          reason: reason as 'ok',
          outcome: reason === 'ok' ? 'success' : 'failure',
        },
        user: { id: changes.principal ?? 'alice' },
        ...changes,
      };
    };
    log.append({
      '@timestamp': at(0),
      event: event('gatehouse/start', 'started', 'success'),
      gatehouse: {
        config: { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_AUTH: ['none'] },
        url: 'http://0.0.0.0:8080/mcp',
      },
    });
    log.append({
      '@timestamp': at(1),
      event: event('gatehouse/security_override', 'security_override', 'success'),
      gatehouse: { setting: 'POSTGRES_ALLOW_PRIVILEGED_ROLE', findings: ['superuser'] },
    });
    // Unauthenticated HTTP calls.
    for (let i = 0; i < 3; i++)
      log.append(
        call(i, {
          principal: 'anonymous',
          auth: { method: 'none' },
          mcp: { ...callEntry(i).mcp!, transport: 'http' },
        }),
      );
    // A write refused for carrying a secret.
    log.append(
      call(3, {
        reason: 'denied',
        principal: 'bob',
        policy: { decision: 'deny', rule: 'outgoing_secret' },
      }),
    );
    // An answer that carried hidden characters, and one a secret was scrubbed from.
    log.append(
      call(4, {
        sanitizer: { flags: ['tag', 'zero_width'] },
        target: { resource: 'github:acme/api#7' },
      }),
    );
    log.append(call(5, { sanitizer: { flags: ['secret'] } }));
    // A burst of denials by one principal within a minute.
    for (let i = 0; i < 6; i++)
      log.append(
        call(20 + i, {
          reason: 'denied',
          principal: 'mallory',
          policy: { decision: 'deny', rule: 'allow_list' },
        }),
      );
    // A write that went through.
    log.append(call(31, {}));
    log.append({
      '@timestamp': at(50),
      event: event('gatehouse/stop', 'stopped', 'success'),
      gatehouse: { reason: 'SIGTERM' },
    });
    log.close();
    return path;
  }

  it('lists each kind of finding, first, and the tables name the refusing rule in a column of its own', async () => {
    const dir = tempDir();
    const path = session(join(dir, 'audit.jsonl'), dir);
    const html = join(dir, 'report.html');
    expect((await cli('report', '--out', html, '--key', join(dir, 'pub.pem'), path)).code).toBe(0);
    const { page } = await open(html);
    const findings = await page.$$eval('[data-finding]', (items) =>
      items.map((i) => [i.getAttribute('data-finding'), i.textContent ?? '']),
    );
    const kinds = findings.map(([k]) => k);
    expect(kinds).toEqual([
      'overrides',
      'unauthenticated',
      'outgoing-secrets',
      'hidden-content',
      'secrets-scrubbed',
      'denial-bursts',
      'writes',
      'new-principals',
    ]);
    const text = Object.fromEntries(findings) as Record<string, string>;
    expect(text.overrides).toContain('POSTGRES_ALLOW_PRIVILEGED_ROLE');
    expect(text.unauthenticated).toMatch(
      /^HIGH: 3 call\(s\) reached a server over HTTP without authentication/,
    );
    expect(text['outgoing-secrets']).toContain('bob');
    expect(text['hidden-content']).toContain('github:acme/api#7 (1: tag, zero_width)');
    expect(text['denial-bursts']).toContain(
      'mallory 6 denials in the minute from 2026-11-29T09:12Z',
    );
    // The findings come before the counts, the counts count each call once.
    const order = await page.$$eval('[data-findings], [data-kpis]', (els) =>
      els.map((e) => (e.hasAttribute('data-findings') ? 'findings' : 'kpis')),
    );
    expect(order).toEqual(['findings', 'kpis']);
    const kpi = async (name: string) => Number(await page.textContent(`[data-kpi="${name}"]`));
    expect((await kpi('succeeded')) + (await kpi('denied')) + (await kpi('errors'))).toBe(
      await kpi('calls'),
    );
    // The rule that refused each denial, as its own column.
    const rules = await page.$$eval('[data-table="failures"] td[data-rule]', (cells) =>
      cells.map((c) => c.getAttribute('data-rule')),
    );
    expect(new Set(rules)).toEqual(new Set(['outgoing_secret', 'allow_list']));
    // The start record's configuration, shown with it.
    expect(await page.textContent('[data-table="lifecycle-events"] [data-config]')).toContain(
      '"GATEHOUSE_AUTH"',
    );
  });

  it('shows the findings above the fold at 1400×1000 (a screenshot is kept beside the report)', async () => {
    const dir = tempDir();
    const path = session(join(dir, 'audit.jsonl'), dir);
    const html = join(dir, 'report.html');
    expect((await cli('report', '--out', html, '--key', join(dir, 'pub.pem'), path)).code).toBe(0);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(pathToFileURL(html).href);
    const box = await page.locator('[data-findings]').boundingBox();
    expect(box).not.toBeNull();
    expect(box!.y + box!.height).toBeLessThanOrEqual(1000);
    const shot = join(dir, 'report-1400x1000.png');
    await page.screenshot({ path: shot });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    await page.close();
  });

  it('names as new only the principals not seen before the period (--from)', async () => {
    const dir = tempDir();
    const path = session(join(dir, 'audit.jsonl'), dir);
    const html = join(dir, 'report.html');
    expect((await cli('report', '--out', html, '--from', '2026-11-29T09:11:00Z', path)).code).toBe(
      0,
    );
    const { page } = await open(html);
    const newcomers = await page.textContent('[data-finding="new-principals"]');
    expect(newcomers).toContain('Principals first seen in the period');
    expect(newcomers).toContain('mallory');
    // alice called before 09:11 and again after: known, not new.
    expect(newcomers).not.toContain('alice');
  });

  it('says when there is nothing to look at first', async () => {
    const { privatePem, publicPem } = keyPair();
    const path = writeLog({ calls: 4, signerPem: privatePem });
    const dir = tempDir();
    writeFileSync(join(dir, 'pub.pem'), publicPem);
    const html = join(dir, 'report.html');
    expect((await cli('report', '--out', html, '--key', join(dir, 'pub.pem'), path)).code).toBe(0);
    const { page } = await open(html);
    const kinds = await page.$$eval('[data-finding]', (items) =>
      items.map((i) => i.getAttribute('data-finding')),
    );
    expect(kinds.filter((k) => !['writes', 'new-principals'].includes(k!))).toEqual([]);
  });
});

describe('calls per upstream account (ADR 0026)', () => {
  it('counts calls by the account each acted as, and flags the service credential in user mode', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.jsonl');
    const log = new AuditLog({
      sinks: [fileSink({ path, maxBytes: 1 << 30, daily: false })],
      service: SERVICE,
    });
    const acting = (
      i: number,
      principal: string,
      upstream: 'user' | 'service' | 'service_fallback',
      login?: string,
      domain = 'github.com',
    ): AuditEntry => {
      const base = callEntry(i);
      return {
        ...base,
        auth: { method: 'api_key', upstream },
        user: {
          id: principal,
          ...(login === undefined
            ? {}
            : { effective: { id: String(1000 + i), name: login, domain } }),
        },
      };
    };
    const stop = (): AuditEntry => ({
      '@timestamp': new Date().toISOString(),
      event: event('gatehouse/stop', 'stopped', 'success'),
      gatehouse: { reason: 'SIGTERM' },
    });
    for (let i = 0; i < 3; i++) log.append(acting(i, 'ci-alice', 'user', 'alice'));
    log.append(acting(3, 'ci-bob', 'user', 'bob'));
    log.append(acting(4, 'ci-carol', 'service_fallback'));
    // The same person on Slack and on Jira Cloud (whose login is an e-mail): one row each.
    log.append(acting(5, 'ci-alice', 'user', 'alice', 'slack.com'));
    log.append(acting(6, 'ci-alice', 'user', 'alice@acme.example', 'acme.atlassian.net'));
    // A Postgres call as the role the role map gave its caller (no upstream credential): the
    // report counts calls per role too (ADR 0027).
    for (const i of [7, 8]) {
      log.append({
        ...callEntry(i),
        user: {
          id: 'rex',
          effective: { id: 'sales_rep', name: 'sales_rep', domain: 'pg:company' },
        },
      });
    }
    log.append(stop());
    log.close();
    const html = join(dir, 'report.html');
    const run = await cli('report', '--out', html, path);
    expect(run.code, JSON.stringify(run)).toBe(0);
    const { page } = await open(html);
    const rows = await page.$$eval('[data-chart="accounts"] tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent)),
    );
    expect(rows[0]).toEqual(['alice (github.com)', '3']);
    expect(rows.slice(1).sort()).toEqual([
      ['(service, fallback)', '1'],
      ['alice (slack.com)', '1'],
      ['alice@acme.example (acme.atlassian.net)', '1'],
      ['bob (github.com)', '1'],
      ['sales_rep (pg:company)', '2'],
    ]);
    const findings = await page.$$eval('[data-finding]', (items) =>
      items.map((i) => i.getAttribute('data-finding')),
    );
    expect(findings).toContain('service-fallback');
    expect(findings).not.toContain('service-in-user-mode');

    // A plain service call on the same server as people's calls: the invariant broke.
    const mixedPath = join(dir, 'mixed.jsonl');
    const mixed = new AuditLog({
      sinks: [fileSink({ path: mixedPath, maxBytes: 1 << 30, daily: false })],
      service: SERVICE,
    });
    mixed.append(acting(0, 'ci-alice', 'user', 'alice'));
    mixed.append(acting(1, 'ci-carol', 'service'));
    mixed.append(stop());
    mixed.close();
    const mixedHtml = join(dir, 'mixed.html');
    expect((await cli('report', '--out', mixedHtml, mixedPath)).code).toBe(0);
    const second = await open(mixedHtml);
    expect(await second.page.textContent('[data-finding="service-in-user-mode"]')).toMatch(
      /^HIGH: Calls acted with the service credential on a server whose other calls acted as each person/,
    );
  });
});
