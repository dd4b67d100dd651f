// Creates the demo company database and its read-only role on a PostgreSQL server, as the demo
// and the benchmarks use it (the tests have their own helper with checksums and extra roles).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { freshDatabase } from '@gatehouse/testkit/postgres';
import pg from 'pg';

const here = (path) => new URL(path, import.meta.url);

/**
 * Creates database `name` from company.sql and the role `gatehouse_ro` (readonly-role.sql) with
 * a random password. Returns the owner's (superuser) and the read-only role's URLs and the
 * table sizes.
 */
export async function seedCompany(adminUrl, name = 'company') {
  const ownerUrl = new URL((await freshDatabase(adminUrl, name, { name })).url);
  const owner = new pg.Client({ connectionString: ownerUrl.toString() });
  await owner.connect();
  try {
    await owner.query(await readFile(here('./company.sql'), 'utf8'));
    const password = randomBytes(12).toString('hex');
    const role = (await readFile(here('./readonly-role.sql'), 'utf8'))
      .replace("'change-me'", `'${password}'`)
      .replaceAll('"company"', `"${name}"`);
    // The role is cluster-wide: a second database on the same server reuses it.
    const exists = await owner.query("SELECT 1 FROM pg_roles WHERE rolname = 'gatehouse_ro'");
    await owner.query(
      exists.rowCount === 0
        ? role
        : role.replace(/^CREATE ROLE[^;]*;/m, `ALTER ROLE gatehouse_ro PASSWORD '${password}';`),
    );
    const counts = await owner.query(
      `SELECT (SELECT count(*) FROM customers)::int AS customers, (SELECT count(*) FROM orders)::int AS orders,
              (SELECT count(*) FROM products)::int AS products, (SELECT count(*) FROM employees)::int AS employees`,
    );
    const readOnlyUrl = new URL(ownerUrl);
    readOnlyUrl.username = 'gatehouse_ro';
    readOnlyUrl.password = password;
    return {
      ownerUrl: ownerUrl.toString(),
      readOnlyUrl: readOnlyUrl.toString(),
      counts: counts.rows[0],
    };
  } finally {
    await owner.end();
  }
}
