import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually, runOnOldNode } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';

// The README's "run it" command, end to end: an embedded PostgreSQL of its own, the seeded
// company, the server over HTTP, the scripted session and the audit verification — and how it
// stops: whatever stops it, nothing stays behind.

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** A temporary folder of the demo's own (TMPDIR): what it leaves behind is what stays in it. */
function ownTmp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'demo-tmp-'));
  chmodSync(dir, 0o1777); // as root, the postgres user must reach the cluster in it
  return dir;
}

/** `npm run demo` as a user runs it (the build skipped: the tree is built), in its own group. */
/**
 * What the demo left in its TMPDIR: nothing, but Node's compile cache — the servers' bins keep it
 * there on purpose (a warm start skips compiling again; no data, no secret).
 */
const leftovers = (tmp: string) => readdirSync(tmp).filter((f) => f !== 'node-compile-cache');

function npmRunDemo(tmp: string, env: Record<string, string> = {}) {
  const child = spawn('npm', ['run', 'demo'], {
    cwd: ROOT,
    env: { ...process.env, TMPDIR: tmp, PORT: '0', GATEHOUSE_DEMO_BUILD: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

describe('npm run demo', () => {
  it('on a Node too old, says so at once — before building anything', () => {
    const old = runOnOldNode(join(ROOT, 'scripts/demo.mjs'));
    expect(old.status).toBe(1);
    expect(old.stderr).toBe(
      `demo: Gatehouse needs Node.js 22.19 or later (Node 24 LTS is recommended); this is Node.js ${old.version}. Install a newer Node.js and run it again. Nothing was built.\n`,
    );
  });

  it(
    'runs the scripted session on the built tree, as the API key’s principal',
    { timeout: 120_000 },
    async () => {
      const tmp = ownTmp();
      const { child, output } = npmRunDemo(tmp, { GATEHOUSE_DEMO_ONESHOT: '1' });
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code, output()).toBe(0);
      for (const expected of [
        'database "company": {"customers":200,"orders":2000,"products":50,"employees":40}',
        'postgres_query: Run a read-only SQL query',
        'my_orders: My orders',
        '✗ Invalid arguments for my_orders: customer_id is taken from the caller (its customer_id claim) and cannot be given',
        '✗ Invalid arguments for customer_orders:',
        'fk (customer_id) → public.customers(id)',
        '1 | Employee 1 | CEO | [masked] | [masked]',
        '✗ Refused by the read-only SQL policy (rule masked_column): nid is masked (public.employees.national_id) and is used in WHERE',
        '✗ Refused by the read-only SQL policy (rule statement_type)',
        '✗ Refused by the read-only SQL policy (rule single_statement)',
        '✗ Refused by the read-only SQL policy (rule function_denied)',
        '✗ Refused by the read-only SQL policy (rule schema_not_allowed)',
        'TRUNCATED at the 3-row cap',
        // The role per caller: the same question, two roles, different rows; no role, refused.
        'logged in as gatehouse_login (NOINHERIT)',
        '✗ PostgreSQL denied access: permission denied for table employees.',
        '✗ No database role is mapped to you (principal "guest@partner.example")',
        'ana@company.example → analyst',
        'rex@company.example → sales_rep',
        'guest@partner.example → (refused)',
        '✓ chain intact, signatures verified',
        'claude_desktop_config.json',
        'npx @modelcontextprotocol/inspector',
        'header Authorization: Bearer gatehouse_',
      ]) {
        expect(output()).toContain(expected);
      }
      const rows = (who: string) =>
        new RegExp(`→ ${who.replace('.', '\\.')} SELECT country[^\\n]*\\n {3}(\\d+) rows`).exec(
          output(),
        )?.[1];
      expect(rows('ana@company.example')).toBe('8');
      expect(rows('rex@company.example')).toBe('2');
      // Every call is the caller the API key names, never "anonymous".
      expect(output()).toMatch(
        /failure denied +demo-analyst +tools\/call +postgres_query → pg:company\/public/,
      );
      expect(output()).not.toMatch(/anonymous/);
      // The verify line runs as printed (npx finds the linked bin; nothing from the registry).
      expect(output()).toMatch(
        /^ {3}npx gatehouse-audit verify --allow-open-tail --key \/\S+\/audit-public-key\.pem \/\S+\/audit\.jsonl$/m,
      );
      expect(leftovers(tmp)).toEqual([]);
    },
  );

  it.each([
    ['while it serves', /Serving on/, 0],
    ['while the database starts', /1\. An embedded PostgreSQL/, 130],
  ])(
    'a SIGINT to npm %s stops everything and removes the database, the audit log and its key',
    { timeout: 120_000 },
    async (_when, moment, expected) => {
      const tmp = ownTmp();
      const { child, output } = npmRunDemo(tmp);
      await eventually(output, (o) => moment.test(o) || child.exitCode !== null, 90_000);
      expect(output()).toMatch(moment);
      if (expected === 0) {
        // The verify line it prints runs as printed, with the bin linked in the checkout (npx
        // never asks the registry: --no-install would fail rather than fetch).
        const line = /^ {3}(npx gatehouse-audit verify .*)$/m.exec(output())![1]!;
        const verify = spawnSync('sh', ['-c', line.replace(/^npx /, 'npx --no-install ')], {
          cwd: ROOT,
          encoding: 'utf8',
        });
        expect(verify.status, verify.stderr).toBe(0);
        expect(verify.stdout).toMatch(/^intact: \d+ records/m);
      }
      child.kill('SIGINT'); // to npm only, not its group: npm passes it on
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code, output()).toBe(expected);
      // Nothing stays: no work folder, no cluster folder, no process of the group.
      expect(leftovers(tmp)).toEqual([]);
      const group = () => {
        try {
          process.kill(-child.pid!, 0);
          return true;
        } catch {
          return false;
        }
      };
      expect(await eventually(group, (alive) => !alive, 10_000)).toBe(false);
    },
  );
});
