import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { ServerUpstream } from '@gatehouse/testkit';
import { freshDatabase, startPostgres } from '@gatehouse/testkit/postgres';

/**
 * A real PostgreSQL with one table and the documented read-only role (demo/readonly-role.sql),
 * and a query through it: what the contract test and the image test run this server against.
 */
export async function upstream(): Promise<ServerUpstream> {
  const server = await startPostgres(process.env.GATEHOUSE_TEST_PG_URL);
  const db = await freshDatabase(server.adminUrl, 'upstream');
  const owner = new pg.Client({ connectionString: db.url });
  await owner.connect();
  const password = 'upstream-test-ro-password';
  try {
    await owner.query('CREATE TABLE release (name text, shipped date)');
    await owner.query("INSERT INTO release VALUES ('gatehouse-container', '2026-12-01')");
    const role = readFileSync(new URL('../demo/readonly-role.sql', import.meta.url), 'utf8')
      .replace("'change-me'", `'${password}'`)
      .replaceAll('"company"', `"${db.name}"`)
      .replaceAll('gatehouse_ro', `ro_${db.name}`);
    await owner.query(role);
  } finally {
    await owner.end();
  }
  const url = new URL(db.url);
  url.username = `ro_${db.name}`;
  url.password = password;
  const wrong = new URL(url);
  wrong.password = 'rejected-password-of-the-contract';
  return {
    env: { POSTGRES_URL: url.toString() },
    rejected: {
      variable: 'POSTGRES_URL',
      value: wrong.toString(),
      said: "PostgreSQL refused the server's login (28P01): password authentication failed",
    },
    call: { name: 'postgres_query', arguments: { sql: 'SELECT name FROM release' } },
    expect: 'gatehouse-container',
    close: async () => {
      await db.drop();
      await server.stop();
    },
  };
}
