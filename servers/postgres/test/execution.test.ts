import { loadConfig } from '@gatehouse/core';
import { createLogger } from '@gatehouse/core/runtime';
import pg from 'pg';
import { eventually, startTcpProxy } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PostgresDatabase, translateError } from '../src/sql/database.ts';
import type { DbCall, StatementPlan } from '../src/sql/database.ts';
import { PostgresConfigSchema } from '../src/config.ts';
import { CappedRows } from '../src/sql/execute.ts';
import { relationKey } from '../src/sql/resolve.ts';
import { SqlService } from '../src/sql/service.ts';
import { companyDatabase, connectPostgres, text } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

// Layer 3 on its own: the read-only transaction, the extended protocol, the timeouts and
// cancellation — driven directly, with no SQL check in front and a superuser behind (the role
// check overridden), so only this layer stands between the SQL and the data.

let company: CompanyDatabase;
let db: PostgresDatabase;
let before: string;
const logger = createLogger({ level: 'silent' });

function database(env: Record<string, string> = {}): PostgresDatabase {
  const config = loadConfig(PostgresConfigSchema, {
    POSTGRES_URL: company.db.url,
    POSTGRES_ALLOW_PRIVILEGED_ROLE: 'true',
    ...env,
  });
  return new PostgresDatabase(config, logger, config.POSTGRES_SCHEMAS);
}

function bounds(ms = 10_000): DbCall {
  return { signal: AbortSignal.timeout(ms), deadline: Date.now() + ms, principal: null };
}

/** Runs a planned statement straight through layer 3 (no parser, no policy). */
async function runPlanned(target: PostgresDatabase, b: DbCall, plan: StatementPlan) {
  const checkout = await target.checkout(b);
  try {
    return await checkout.run(plan);
  } catch (error) {
    checkout.abandon(error);
    throw translateError(error, b.signal);
  }
}

/** Runs SQL straight through layer 3 (no parser, no policy). */
function raw(sql: string, target = db, b = bounds()) {
  return runPlanned(target, b, {
    sql,
    params: [],
    rows: new CappedRows({ maxRows: 100, maxBytes: 65_536 }),
  });
}

async function activeQueries(pattern: string): Promise<number> {
  const result = await company.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`,
    [`%${pattern}%`],
  );
  return result.rows[0]!.n;
}

const until = (check: () => Promise<boolean>, ms = 5_000): Promise<boolean> =>
  eventually(check, Boolean, ms, 50);

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'exec');
  db = database();
  await db.verify();
  before = await company.checksum();
});
afterAll(async () => {
  await db?.close();
  await company?.close();
});

describe('a connection goes back to the pool only in a clean session state', () => {
  const pid = async (pool: PostgresDatabase) =>
    (await raw('SELECT pg_backend_pid()', pool)).rows[0]![0] as number;

  it.each([
    ['a session advisory lock', 'SELECT pg_advisory_lock(77)'],
    ['a prepared statement', 'PREPARE leftover AS SELECT 1'],
  ])('destroys the connection that kept %s', async (_n, sql) => {
    const pool = database();
    try {
      const before = await pid(pool);
      // The same (only) connection serves again while its session is clean…
      expect(await pid(pool)).toBe(before);
      await raw(sql, pool);
      // …but not once it kept state: a new connection serves, and the lock went with the old.
      expect(await pid(pool)).not.toBe(before);
      await expect.poll(() => company.advisoryLocks()).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it('keeps a connection whose session is clean (settings changed in the transaction roll back)', async () => {
    const pool = database();
    try {
      const before = await pid(pool);
      await raw("SELECT set_config('search_path', 'pg_temp', false)", pool);
      expect(await pid(pool)).toBe(before);
      const settings = await raw("SELECT current_setting('search_path') AS p", pool);
      expect(settings.rows).toEqual([['public']]);
    } finally {
      await pool.close();
    }
  });
});

describe('the catalog cache', () => {
  it('is bounded: the names of many different statements do not grow it without end', async () => {
    const config = loadConfig(PostgresConfigSchema, {
      POSTGRES_URL: company.db.url,
      POSTGRES_ALLOW_PRIVILEGED_ROLE: 'true',
    });
    const small = new PostgresDatabase(config, logger, config.POSTGRES_SCHEMAS, {
      catalogCacheEntries: 5,
    });
    try {
      for (let i = 0; i < 12; i++) {
        await small.transaction(bounds(), (client) =>
          small.catalog(client, undefined).reached({
            functions: [relationKey('public', `made_up_${i}`)],
            columnFunctions: [],
            operators: [],
            relations: [],
            types: [],
          }),
        );
      }
      expect(small.catalogCacheSize).toBe(5);
    } finally {
      await small.close();
    }
  });
});

describe('the SQL check cache', () => {
  it('answers a repeated text from the cache, refusals included, and still checks the catalog per call', async () => {
    const harness = await connectPostgres({ POSTGRES_URL: company.url });
    try {
      const call = (sql: string) =>
        harness.client.callTool({ name: 'postgres_query', arguments: { sql } });
      const ok = 'SELECT count(*) AS n FROM customers';
      const rows = async () =>
        ((await call(ok)).structuredContent as { rows?: unknown } | undefined)?.rows;
      const firstRows = await rows();
      expect(firstRows).toBeDefined();
      expect(await rows()).toEqual(firstRows);
      const refused = 'DELETE FROM customers';
      const first = text(await call(refused));
      expect(first).toMatch(/^Refused/);
      expect(text(await call(refused))).toBe(first);
      // Same text, catalog changed in between: the catalog rule runs again and refuses now.
      const probe = 'SELECT count(*) FROM public.cache_probe';
      await company.admin.query('CREATE TABLE public.cache_probe (x int)');
      try {
        await company.admin.query(`GRANT SELECT ON public.cache_probe TO ${company.role}`);
        expect((await call(probe)).isError).toBeFalsy();
        await company.admin.query(`REVOKE SELECT ON public.cache_probe FROM ${company.role}`);
        expect((await call(probe)).isError).toBe(true);
      } finally {
        await company.admin.query('DROP TABLE public.cache_probe');
      }
    } finally {
      await harness.close();
    }
  });
});

describe('the read-only transaction', () => {
  it.each([
    [
      'a second statement',
      'SELECT 1; DROP TABLE customers',
      /multiple commands into a prepared statement/,
    ],
    [
      'COMMIT then a write',
      'COMMIT; DELETE FROM orders',
      /multiple commands into a prepared statement/,
    ],
    ['a write', 'DELETE FROM orders', /read-only transaction/],
    ['DDL', 'DROP TABLE order_items', /read-only transaction/],
    [
      'a data-modifying CTE',
      'WITH d AS (DELETE FROM orders RETURNING 1) SELECT count(*) FROM d',
      /read-only transaction/,
    ],
    ['SELECT INTO', 'SELECT * INTO stolen FROM customers', /read-only transaction/],
    ['nextval', "SELECT nextval('orders_id_seq')", /read-only transaction/],
    [
      'SET TRANSACTION READ WRITE',
      'SET TRANSACTION READ WRITE',
      /read-write mode must be set before any query/,
    ],
    ['lo_import', "SELECT lo_import('/etc/hostname')", /read-only transaction/],
  ])('stops %s, even as a superuser', async (_what, sql, message) => {
    await expect(raw(sql)).rejects.toThrow(message);
    expect(await company.checksum()).toBe(before);
  });

  it('does not stop COPY … TO PROGRAM for a superuser: layers 1 and 2 must', async () => {
    // PostgreSQL checks read-only for COPY FROM only. Hence the role check refuses superusers
    // and pg_execute_server_program, and the parser refuses COPY. (Each program reads the row
    // PostgreSQL pipes to it: one that does not may close the pipe first, a "Broken pipe".)
    const marker = `/tmp/gatehouse-copy-${process.pid}-${Date.now()}`;
    await raw(`COPY (SELECT 1) TO PROGRAM 'cat >/dev/null; touch ${marker}'`);
    // Checked on the database server's own filesystem (it may be another machine).
    const stat = await company.admin.query<{ exists: boolean }>(
      'SELECT (pg_stat_file($1, true)).size IS NOT NULL AS exists',
      [marker],
    );
    expect(stat.rows[0]!.exists).toBe(true);
    await company.admin.query(`COPY (SELECT 1) TO PROGRAM 'cat >/dev/null; rm -f ${marker}'`);
    expect(await company.checksum()).toBe(before);
  });

  it('runs every call with the configured limits and search_path, and rolls back', async () => {
    const limited = database({
      POSTGRES_STATEMENT_TIMEOUT_MS: '4321',
      POSTGRES_LOCK_TIMEOUT_MS: '321',
      POSTGRES_SCHEMAS: 'public,hr',
    });
    try {
      const result = await raw(
        `SELECT current_setting('transaction_read_only') AS ro,
                current_setting('statement_timeout') AS st,
                current_setting('lock_timeout') AS lt,
                current_setting('idle_in_transaction_session_timeout') AS idle,
                current_setting('search_path') AS path`,
        limited,
      );
      expect(result.rows[0]).toEqual(['on', '4321ms', '321ms', '9321ms', 'public, hr']);
      // Nothing of the transaction survives it: a later call sees the session defaults again.
      await limited.transaction(bounds(), async (client) => {
        const txn = await client.query<{ s: string }>(
          "SELECT current_setting('lock_timeout') AS s",
        );
        expect(txn.rows[0]!.s).toBe('321ms');
      });
    } finally {
      await limited.close();
    }
  });

  it('lowers statement_timeout to what is left of the call deadline', async () => {
    const result = await raw(
      "SELECT current_setting('statement_timeout') AS st",
      db,
      bounds(1_500),
    );
    const ms = Number(String(result.rows[0]![0]).replace('ms', '').replace(/s$/, '000'));
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(1_500);
  });
});

describe('timeouts and cancellation reach the backend', () => {
  it('cancels a statement at statement_timeout', async () => {
    const quick = database({ POSTGRES_STATEMENT_TIMEOUT_MS: '300' });
    try {
      await expect(
        raw('SELECT pg_sleep(30), 1 AS statement_timeout_probe', quick),
      ).rejects.toMatchObject({
        code: 'statement_timeout',
      });
      // The backend reports itself idle just after it answers: give it the moment it takes.
      expect(
        await until(async () => (await activeQueries('statement_timeout_probe')) === 0, 3_000),
      ).toBe(true);
    } finally {
      await quick.close();
    }
  });

  it('cancels the backend query when the call is aborted', async () => {
    const controller = new AbortController();
    const running = raw('SELECT pg_sleep(30), 1 AS abort_probe', db, {
      signal: controller.signal,
      deadline: Date.now() + 60_000,
      principal: null,
    });
    expect(await until(async () => (await activeQueries('abort_probe')) === 1)).toBe(true);
    controller.abort(new Error('client cancelled'));
    await expect(running).rejects.toThrow('client cancelled');
    expect(await until(async () => (await activeQueries('abort_probe')) === 0, 3_000)).toBe(true);
  });

  it('gives up on a lock after lock_timeout', async () => {
    const locker = new pg.Client({ connectionString: company.db.url });
    await locker.connect();
    const quick = database({ POSTGRES_LOCK_TIMEOUT_MS: '200' });
    try {
      await locker.query('BEGIN; LOCK TABLE products IN ACCESS EXCLUSIVE MODE');
      await expect(raw('SELECT count(*) FROM products', quick)).rejects.toMatchObject({
        code: 'lock_timeout',
      });
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
      await quick.close();
    }
  });

  it('cancels the backend through the MCP client (notifications/cancelled)', async () => {
    const h = await connectPostgres({ POSTGRES_URL: company.url });
    try {
      const controller = new AbortController();
      const call = h.client.callTool(
        {
          name: 'postgres_query',
          arguments: {
            sql: 'SELECT count(*) AS mcp_cancel_probe FROM generate_series(1, 100000) a, generate_series(1, 100000) b',
          },
        },
        { signal: controller.signal },
      );
      expect(await until(async () => (await activeQueries('mcp_cancel_probe')) === 1)).toBe(true);
      controller.abort();
      await expect(call).rejects.toThrow();
      expect(await until(async () => (await activeQueries('mcp_cancel_probe')) === 0, 3_000)).toBe(
        true,
      );
    } finally {
      await h.close();
    }
  });

  it('cancels the backend at the tool deadline', async () => {
    const h = await connectPostgres({
      POSTGRES_URL: company.url,
      GATEHOUSE_TOOL_TIMEOUT_MS: '500',
    });
    try {
      const result = await h.client.callTool({
        name: 'postgres_query',
        arguments: {
          sql: 'SELECT count(*) AS deadline_probe FROM generate_series(1, 100000) a, generate_series(1, 100000) b',
        },
      });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(/did not finish|statement timeout/);
      expect(await until(async () => (await activeQueries('deadline_probe')) === 0, 3_000)).toBe(
        true,
      );
    } finally {
      await h.close();
    }
  });
});

describe('connections', () => {
  it('never reuses a connection that saw an error', async () => {
    const single = database({ POSTGRES_POOL_SIZE: '1' });
    const pid = async () => (await raw('SELECT pg_backend_pid()', single)).rows[0]![0];
    try {
      const first = await pid();
      expect(await pid()).toBe(first); // healthy connections are reused
      await expect(raw('SELECT 1 / 0', single)).rejects.toThrow(/division by zero/);
      expect(await pid()).not.toBe(first);
    } finally {
      await single.close();
    }
  });
});

/**
 * A TCP proxy in front of PostgreSQL that reads the frontend's protocol messages: how many
 * Sync, Query and Bind messages (each Sync or Query ends a round trip) and how many writes a
 * call sent.
 */
async function countingProxy(target: string) {
  const url = new URL(target);
  const counts = { sync: 0, query: 0, writes: 0, bind: 0 };
  // One reader per proxied connection would be exact; the tests use a pool of one.
  let pending = Buffer.alloc(0);
  let started = false;
  const read = (chunk: Buffer): void => {
    counts.writes++;
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      if (!started) {
        // The startup message (and an SSL request) has no type byte.
        if (pending.length < 8) break;
        const length = pending.readInt32BE(0);
        if (pending.length < length) break;
        const code = pending.readInt32BE(4);
        pending = pending.subarray(length);
        if (code !== 80877103) started = true;
        continue;
      }
      if (pending.length < 5) break;
      const length = pending.readInt32BE(1);
      if (pending.length < length + 1) break;
      const type = String.fromCharCode(pending[0]!);
      if (type === 'S') counts.sync++;
      if (type === 'Q') counts.query++;
      if (type === 'B') counts.bind++;
      pending = pending.subarray(length + 1);
    }
  };
  const proxy = await startTcpProxy(
    { host: url.hostname, port: Number(url.port) },
    { onClientData: read },
  );
  return {
    url: proxy.urlFor(target),
    counts,
    reset: () => Object.assign(counts, { sync: 0, query: 0, writes: 0, bind: 0 }),
    close: () => proxy.close(),
  };
}

describe('one round trip', () => {
  it('sends the whole read-only transaction of a query in one write with one Sync', async () => {
    const proxy = await countingProxy(company.db.url);
    const proxied = database({ POSTGRES_URL: proxy.url, POSTGRES_POOL_SIZE: '1' });
    try {
      await raw('SELECT 1', proxied); // connects and warms the pool
      proxy.reset();
      const result = await raw('SELECT id, name FROM customers WHERE id = 42', proxied);
      expect(result.rows).toHaveLength(1);
      // BEGIN READ ONLY, the settings, the statement, ROLLBACK and the session check: one write,
      // one Sync, no simple Query — PostgreSQL answers all of it in one round trip.
      expect(proxy.counts).toMatchObject({ sync: 1, query: 0, writes: 1 });
      // The cap still holds inside the one round trip, and the connection is reused after it.
      proxy.reset();
      const capped = await runPlanned(proxied, bounds(), {
        sql: 'SELECT g FROM generate_series(1, 100000) g',
        params: [],
        rows: new CappedRows({ maxRows: 10, maxBytes: 65_536 }),
      });
      expect(capped).toMatchObject({ rowCount: 10, truncated: true, truncatedBy: 'max_rows' });
      expect(proxy.counts).toMatchObject({ sync: 1, query: 0, writes: 1 });
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });

  it('checks the session after a statement that can run code other than built-in, non-volatile functions — and only then', async () => {
    await company.admin.query(`
      CREATE FUNCTION public.twice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
      CREATE FUNCTION public.label(customers) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT $1.name';
      CREATE FUNCTION public."dotted.name"(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1';
      CREATE VIEW public.customer_names AS SELECT name FROM customers;
      GRANT SELECT ON public.customer_names TO ${company.role}`);
    const proxy = await countingProxy(company.url);
    const config = loadConfig(PostgresConfigSchema, {
      POSTGRES_URL: proxy.url,
      POSTGRES_POOL_SIZE: '1',
    });
    const proxied = new PostgresDatabase(config, logger, config.POSTGRES_SCHEMAS);
    const service = new SqlService(proxied, config);
    // Statements bound in the round trip: BEGIN, settings, the statement, ROLLBACK (+ the identity
    // check before ROLLBACK and the session check after it).
    const binds = async (sql: string) => {
      await service.query(bounds(), sql, [], 10); // the catalog lookup, cached from here on
      proxy.reset();
      await service.query(bounds(), sql, [], 10);
      expect(proxy.counts).toMatchObject({ sync: 1, query: 0 });
      return proxy.counts.bind;
    };
    try {
      expect(await binds('SELECT upper(name), length(name) FROM customers WHERE id = 1')).toBe(4);
      expect(await binds('SELECT count(*) FROM orders')).toBe(4);
      expect(await binds('SELECT twice(id) FROM customers WHERE id = 1')).toBe(6); // owner code
      expect(await binds('SELECT random() AS r')).toBe(6); // volatile, even if harmless
      expect(await binds('SELECT name FROM customer_names LIMIT 1')).toBe(6); // a view
      // …also where a CTE of its name elsewhere in the statement hides it from name matching.
      expect(
        await binds(
          'SELECT name FROM customer_names WHERE EXISTS (WITH customer_names AS (SELECT 1) SELECT 1) LIMIT 1',
        ),
      ).toBe(6);
      // …and owner code called in column notation (`c.label` is label(c)).
      expect(await binds('SELECT c.label FROM customers c WHERE c.id = 1')).toBe(6);
      // …and a function whose quoted name has a dot in it.
      expect(await binds('SELECT "dotted.name"(1) AS x')).toBe(6);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });

  it('binds parameters as text, nulls as NULL', async () => {
    const result = await runPlanned(db, bounds(), {
      sql: 'SELECT $1::int + 1 AS n, $2::text IS NULL AS missing, $3::bool AS yes',
      params: [41, null, true],
      rows: new CappedRows({ maxRows: 10, maxBytes: 65_536 }),
    });
    expect(result.rows).toEqual([[42, true, true]]);
  });

  it('drops the connection instead of reading on far past the byte cap, and answers with what fits', async () => {
    const single = database({ POSTGRES_POOL_SIZE: '1' });
    const pid = async () => (await raw('SELECT pg_backend_pid()', single)).rows[0]![0];
    const big = (sql: string) =>
      runPlanned(single, bounds(), {
        sql,
        params: [],
        rows: new CappedRows({ maxRows: 1_000, maxBytes: 16_384 }),
      });
    try {
      const first = await pid();
      // A little past the cap: the rest is skipped unparsed and the connection stays.
      const near = await big("SELECT repeat('x', 1000) FROM generate_series(1, 30)");
      expect(near).toMatchObject({ truncated: true, truncatedBy: 'max_bytes', valuesCut: 0 });
      expect(near.rowCount).toBe(16);
      expect(await pid()).toBe(first);
      // Far past it (1 000 rows of 100 KB): the connection is cut, not drained.
      const far = await big("SELECT repeat('x', 100000) FROM generate_series(1, 1000)");
      expect(far).toMatchObject({ truncated: true, truncatedBy: 'max_bytes' });
      expect(far.rowCount).toBeGreaterThan(10); // each value cut to 1 024 characters
      const next = await pid();
      expect(next).not.toBe(first);
      // Nothing of the dropped call runs on: its backend is gone.
      await expect
        .poll(async () => {
          const r = await company.admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [
            first,
          ]);
          return r.rowCount;
        })
        .toBe(0);
    } finally {
      await single.close();
    }
  });
});
