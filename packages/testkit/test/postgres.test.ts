import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freshDatabase } from '../src/postgres.js';
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
