import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { companyDatabase, connectPostgres, text } from './helpers.ts';
import type { CompanyDatabase, PostgresHarness } from './helpers.ts';

// The regression suite of read-only bypasses, against a real PostgreSQL through a real MCP
// client and every layer. After each attempt, a fingerprint of all data, schema objects,
// sequences, large objects, roles and collations — taken over a separate superuser
// connection — must be unchanged.

let company: CompanyDatabase;
let h: PostgresHarness;
let before: string;
let revokes: string[] = [];

/** Objects a database owner might define, reached by queries that name no function of theirs. */
const OWNER_CODE = `
  -- A cast whose function runs a shell command with its owner's rights.
  CREATE TYPE public.evil AS (a int);
  CREATE FUNCTION public.evil_to_int(public.evil) RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    AS $$ BEGIN COPY (SELECT 1) TO PROGRAM 'touch /tmp/gatehouse-pwned'; RETURN 1; END $$;
  CREATE CAST (public.evil AS int) WITH FUNCTION public.evil_to_int(public.evil);
  -- A domain whose CHECK calls a function that takes a session lock (and says it is IMMUTABLE).
  CREATE FUNCTION public.check_ok(text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER
    AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN true; END $$;
  CREATE DOMAIN public.safe_text AS text CHECK (public.check_ok(VALUE));
  -- An aggregate whose transition function writes (the aggregate's own row says IMMUTABLE).
  CREATE FUNCTION public.agg_step(int, int) RETURNS int LANGUAGE plpgsql VOLATILE
    AS $$ BEGIN PERFORM pg_advisory_lock(4243); RETURN $1 + $2; END $$;
  CREATE AGGREGATE public.total(int) (SFUNC = public.agg_step, STYPE = int, INITCOND = '0');
  -- Functions whose volatility label lies: marked IMMUTABLE, they take a session lock.
  CREATE FUNCTION public.lying(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS $$ BEGIN PERFORM pg_advisory_lock(4244); RETURN $1; END $$;
  CREATE FUNCTION public.lying_eq(int, int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
    AS $$ BEGIN PERFORM pg_advisory_lock(4245); RETURN $1 = $2; END $$;
  CREATE OPERATOR public.=~= (FUNCTION = public.lying_eq, LEFTARG = int, RIGHTARG = int);
  -- …and one the operator trusted by name, which leaves a prepared statement behind.
  CREATE FUNCTION public.leave_prepared() RETURNS int LANGUAGE plpgsql VOLATILE
    AS $$ BEGIN EXECUTE 'PREPARE leftover AS SELECT 1'; RETURN 1; END $$;
  -- A shell command behind an innocent IMMUTABLE wrapper that names it.
  CREATE FUNCTION public.shell() RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    AS $$ BEGIN COPY (SELECT 1) TO PROGRAM 'touch /tmp/gatehouse-pwned'; RETURN 1; END $$;
  CREATE FUNCTION public.innocent() RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT public.shell()';
  -- Views and a row-security policy that call such code. (A virtual generated column cannot:
  -- PostgreSQL 18 allows only built-in functions in them.)
  CREATE VIEW public.file_view AS SELECT pg_read_file('/etc/hostname') AS f;
  CREATE VIEW public.activity_view AS SELECT * FROM pg_stat_get_activity(NULL);
  CREATE FUNCTION public.note_seen() RETURNS boolean LANGUAGE plpgsql VOLATILE
    AS $$ BEGIN PERFORM pg_advisory_lock(4246); RETURN true; END $$;
  CREATE TABLE public.notes (id int, body text);
  ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
  CREATE POLICY seen ON public.notes USING (public.note_seen());
`;

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'bypass');
  // Functions a database owner might define; PUBLIC may execute functions by default.
  await company.admin.query(`
    CREATE FUNCTION public.bump() RETURNS int LANGUAGE sql VOLATILE
      AS 'UPDATE products SET price = price + 1; SELECT 1';
    CREATE FUNCTION public.sneaky() RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
      AS $$ BEGIN DELETE FROM order_items; RETURN 1; END $$;
    CREATE FUNCTION public.stable_writer() RETURNS int LANGUAGE plpgsql STABLE
      AS $$ BEGIN EXECUTE 'DELETE FROM order_items'; RETURN 1; END $$;
    CREATE FUNCTION public.flip() RETURNS text LANGUAGE plpgsql VOLATILE
      AS $$ BEGIN PERFORM set_config('transaction_read_only', 'off', true);
                  INSERT INTO customers (name, email, country) VALUES ('x', 'x@x', 'DE');
                  RETURN 'done'; END $$;
    CREATE FUNCTION public.eq_bump(int, int) RETURNS boolean LANGUAGE sql VOLATILE
      AS 'UPDATE products SET price = 0; SELECT $1 = $2';
    CREATE OPERATOR public.=== (FUNCTION = public.eq_bump, LEFTARG = int, RIGHTARG = int);
    CREATE PROCEDURE public.purge() LANGUAGE sql AS 'DELETE FROM order_items';
    CREATE VIEW public.bump_view AS SELECT public.bump() AS b;
    CREATE VIEW public.sneaky_view AS SELECT public.sneaky() AS s;
    ${OWNER_CODE}
    GRANT SELECT ON public.bump_view, public.sneaky_view, public.file_view, public.activity_view,
      public.notes TO ${company.role};
  `);
  // Layer 1 first: while SECURITY DEFINER functions that write are executable by the role, the
  // server does not start. The DBA runs the REVOKEs the findings name; then it does.
  const refused = await connectPostgres({ POSTGRES_URL: company.url }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(Error);
  revokes = [...String((refused as Error).message).matchAll(/run: (REVOKE [^;]+;)/g)].map(
    (m) => m[1]!,
  );
  expect(revokes.sort()).toEqual(
    ['check_ok(text)', 'evil_to_int(evil)', 'shell()', 'sneaky()'].map(
      (fn) => `REVOKE EXECUTE ON FUNCTION public.${fn} FROM PUBLIC;`,
    ),
  );
  for (const revoke of revokes) await company.admin.query(revoke);
  // An operator who allowed volatile functions by name, wrongly trusting them.
  h = await connectPostgres({
    POSTGRES_URL: company.url,
    POSTGRES_ALLOW_FUNCTIONS: 'sneaky,flip,leave_prepared',
  });
  before = await company.checksum();
});

afterAll(async () => {
  await h?.close();
  await company?.close();
});

async function attempt(sql: string) {
  const result = await h.client.callTool({ name: 'postgres_query', arguments: { sql } });
  expect(result.isError, `${sql} was not refused:\n${text(result)}`).toBe(true);
  expect(await company.checksum(), `${sql} changed the database`).toBe(before);
  return text(result);
}

// [attempt, what must stop it: a rule of the SQL policy or PostgreSQL's own refusal]
const attempts: Array<[string, RegExp]> = [
  // Leaving the read-only transaction with a second statement.
  ['SELECT 1; COMMIT; DROP TABLE customers;', /rule single_statement/],
  ['COMMIT; DROP SCHEMA public CASCADE;', /rule single_statement/],
  ['END; DELETE FROM orders;', /rule single_statement/],
  ['ROLLBACK; UPDATE products SET price = 0;', /rule single_statement/],
  ['SELECT 1; COMMIT; BEGIN READ WRITE; DELETE FROM orders; COMMIT;', /rule single_statement/],
  ['/* harmless */ COMMIT; DROP TABLE customers', /rule single_statement/],
  ['SELECT 1 --\n; DROP TABLE customers', /rule single_statement/],
  ['SELECT $$;$$; DROP TABLE customers', /rule single_statement/],
  ['SELECT 1 /* ; */ ; DELETE FROM orders', /rule single_statement/],
  // Turning read-only off.
  ['SET TRANSACTION READ WRITE', /rule statement_type/],
  ['SET default_transaction_read_only = off', /rule statement_type/],
  ["SELECT set_config('default_transaction_read_only', 'off', false)", /rule function_denied/],
  ["SELECT set_config('transaction_read_only', 'off', true)", /rule function_denied/],
  // Writes inside a SELECT.
  ['WITH d AS (DELETE FROM order_items RETURNING *) SELECT count(*) FROM d', /rule data_modifying/],
  ['WITH u AS (UPDATE products SET price = 0 RETURNING 1) SELECT * FROM u', /rule data_modifying/],
  [
    "WITH i AS (INSERT INTO customers (name, email, country) VALUES ('x', 'x@x', 'DE') RETURNING id) SELECT id FROM i",
    /rule data_modifying/,
  ],
  ['SELECT * INTO stolen FROM customers', /rule select_into/],
  ['CREATE TABLE stolen AS SELECT * FROM customers', /rule statement_type/],
  ['SELECT * FROM customers FOR UPDATE', /rule locking_clause/],
  // Server files, programs, large objects, other databases.
  ["COPY customers TO PROGRAM 'touch /tmp/gatehouse-pwned'", /rule statement_type/],
  ["COPY (SELECT 1) TO '/tmp/gatehouse-pwned'", /rule statement_type/],
  ["SELECT * FROM pg_read_file('/etc/passwd')", /rule function_denied/],
  ["SELECT pg_catalog.pg_read_file('/etc/passwd')", /rule function_denied/],
  ['SELECT "pg_read_file"(\'/etc/passwd\')', /rule function_denied/],
  ['SELECT U&"\\0070g_read_file"(\'/etc/passwd\')', /rule function_denied/],
  ["SELECT * FROM pg_ls_dir('.')", /rule function_denied/],
  ["SELECT lo_import('/etc/passwd')", /rule function_denied/],
  ["SELECT lo_from_bytea(0, 'x')", /rule function_denied/],
  ["SELECT dblink_exec('dbname=postgres', 'DROP TABLE customers')", /rule function_denied/],
  ["SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)", /rule function_denied/],
  ["SELECT query_to_xml('DELETE FROM orders RETURNING 1', true, true, '')", /rule function_denied/],
  ["SELECT pg_import_system_collations('pg_catalog')", /rule function_denied/],
  // Sequences, locks, signals, notifications, sleeping.
  ["SELECT nextval('orders_id_seq')", /rule function_denied/],
  ["SELECT setval('orders_id_seq', 1)", /rule function_denied/],
  ['SELECT pg_advisory_lock(42)', /rule function_denied/],
  ['SELECT pg_try_advisory_lock(42)', /rule function_denied/],
  ['SELECT pg_terminate_backend(pg_backend_pid())', /rule function_denied/],
  ["SELECT pg_notify('x', 'y')", /rule function_denied/],
  ['SELECT pg_sleep(60)', /rule function_denied/],
  ['LISTEN gatehouse', /rule statement_type/],
  ["NOTIFY gatehouse, 'x'", /rule statement_type/],
  ['SELECT txid_current()', /rule function_denied/],
  // Procedural code and prepared statements.
  ['DO $$ BEGIN DELETE FROM orders; END $$', /rule statement_type/],
  ['CALL purge()', /rule statement_type/],
  ['PREPARE p AS DELETE FROM orders', /rule statement_type/],
  ['EXECUTE p', /rule statement_type/],
  ['DECLARE c CURSOR FOR SELECT 1', /rule statement_type/],
  ['EXPLAIN ANALYZE DELETE FROM orders', /rule statement_type/],
  ['EXPLAIN ANALYZE SELECT bump()', /rule explain_analyze/],
  // Plain DDL/DML.
  ['TRUNCATE orders', /rule statement_type/],
  ['DROP TABLE customers', /rule statement_type/],
  ['ALTER TABLE customers ADD COLUMN x int', /rule statement_type/],
  [
    'MERGE INTO products p USING products q ON p.id = q.id WHEN MATCHED THEN DELETE',
    /rule statement_type/,
  ],
  ['LOCK TABLE customers', /rule statement_type/],
  ['VACUUM FULL orders', /rule statement_type/],
  // Catalogs outside the allow-list.
  ['SELECT * FROM pg_catalog.pg_authid', /rule system_catalog/],
  ['SELECT * FROM pg_shadow', /rule system_catalog/],
  ['SELECT * FROM hr.salaries', /rule schema_not_allowed/],
  // Functions that write, defined by the database owner.
  ['SELECT bump()', /rule function_volatile.*public\.bump/],
  ['SELECT * FROM bump()', /rule function_volatile/],
  ['SELECT 1 === 2', /rule operator_volatile/],
  // …declared STABLE: PostgreSQL refuses writes in a non-volatile function.
  ['SELECT stable_writer()', /not allowed in a non-volatile function/],
  // …allowed by the operator (layer 2 lets it through): the read-only transaction stops it
  // (layer 3); a SECURITY DEFINER one lost its EXECUTE grant to layer 1's REVOKE.
  ['SELECT flip()', /read-only transaction|read-write mode must be set before any query/],
  ['SELECT sneaky()', /permission denied for function sneaky/],
  ['SELECT * FROM sneaky_view', /permission denied for function sneaky/],
  // …hidden in a view: layer 2 sees what the view calls.
  ['SELECT * FROM bump_view', /rule function_volatile.*public\.bump\(\).*reached through a view/],
  // Owner code reached without naming a function: a cast, a domain, an aggregate, a view, a
  // row-security policy.
  ['SELECT ROW(1)::evil::int', /rule function_volatile.*evil_to_int\(evil\).*cast/],
  ['SELECT CAST(ROW(1)::public.evil AS integer)', /rule function_volatile.*evil_to_int/],
  ["SELECT 'x'::safe_text", /rule function_definer.*check_ok\(text\).*domain constraint/],
  ['SELECT CAST(name AS safe_text) FROM customers', /rule function_definer.*check_ok/],
  ['SELECT total(id) FROM customers', /rule function_volatile.*agg_step.*aggregate support/],
  ['SELECT * FROM file_view', /rule function_denied.*pg_read_file.*view/],
  ['SELECT * FROM notes', /rule function_volatile.*note_seen.*row security policy/],
  // A shell command behind an IMMUTABLE wrapper: layer 1's REVOKE took EXECUTE away.
  ['SELECT innocent()', /permission denied for function shell/],
  // The functions behind the refused system views, refused like the views.
  ['SELECT * FROM pg_stat_get_activity(NULL)', /rule system_catalog/],
  ['SELECT pg_stat_get_backend_pid(1)', /rule system_catalog/],
  ['SELECT * FROM pg_lock_status()', /rule system_catalog/],
  ['SELECT * FROM pg_show_all_settings()', /rule system_catalog/],
  ['SELECT * FROM pg_hba_file_rules()', /rule system_catalog/],
  ['SELECT * FROM activity_view', /rule system_catalog.*through the view public\.activity_view/],
  // Name lookups that would confirm an object in a hidden schema exists.
  ["SELECT 'hr.salaries'::regclass", /rule schema_not_allowed.*schema "hr"/],
  ['SELECT \'"hr"."salaries"\'::regclass::oid', /rule schema_not_allowed/],
  ["SELECT to_regclass('hr.salaries')", /rule schema_not_allowed/],
  ["SELECT 'hr'::regnamespace", /rule schema_not_allowed/],
  ["SELECT has_schema_privilege('hr', 'USAGE')", /rule schema_not_allowed/],
  ["SELECT pg_relation_size('hr.salaries')", /rule schema_not_allowed/],
  ["SELECT ('hr.' || 'salaries')::regclass", /rule name_lookup/],
  ["SELECT 'pg_catalog.pg_authid'::regclass", /rule system_catalog/],
];

describe('owner code that lies about itself runs, but leaves nothing on a pooled connection', () => {
  it.each([
    ['SELECT lying(1) AS x', 'advisory locks'],
    ['SELECT 1 =~= 1 AS x', 'advisory locks'],
    ['SELECT leave_prepared() AS x', 'prepared statements'],
  ])('%s: the connection that kept %s is destroyed', async (sql, dirty) => {
    const result = await h.client.callTool({ name: 'postgres_query', arguments: { sql } });
    expect(result.isError, text(result)).toBeFalsy();
    // The destroyed connection's backend exits (and drops its locks) a moment later.
    await expect.poll(() => company.advisoryLocks()).toBe(0);
    expect(h.logs()).toContain(dirty);
    expect(h.logs()).toContain('the connection was destroyed');
    // The pool serves the next call from a clean connection.
    const next = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT 1 AS one' },
    });
    expect(next.structuredContent).toMatchObject({ rows: [[1]] });
    expect(await company.checksum()).toBe(before);
  });
});

describe('read-only bypass attempts', () => {
  let first = 0;
  beforeAll(() => {
    first = h.records.length;
  });

  it.each(attempts)('%s', async (sql, stoppedBy) => {
    expect(await attempt(sql)).toMatch(stoppedBy);
  });

  it('wrote no file and left every attempt in the audit trail as a failure', () => {
    expect(existsSync('/tmp/gatehouse-pwned')).toBe(false);
    const calls = h.records.slice(first).filter((r) => r.event.action === 'tools/call');
    expect(calls.length).toBeGreaterThanOrEqual(attempts.length);
    expect(calls.every((r) => r.event.outcome === 'failure')).toBe(true);
    // What the SQL policy stopped is a denial with its rule, not a tool error: the report's
    // "what was blocked" counts every one of them.
    const policy = attempts.filter(([, by]) => /rule /.test(by.source)).length;
    const denied = calls.filter((r) => r.event.reason === 'denied');
    expect(denied).toHaveLength(policy);
    for (const record of denied) {
      expect(record.policy?.decision).toBe('deny');
      expect(record.policy?.rule).toMatch(/^sql:[a-z_]+$/);
      expect(record.event.type).toContain('denied');
    }
    // The audit trail keeps the shape and hash of the SQL, not the SQL.
    expect(JSON.stringify(calls)).not.toContain('DROP TABLE');
  });

  it('answers the size functions of allowed tables (VOLATILE by label, they only read)', async () => {
    const result = await h.client.callTool({
      name: 'postgres_query',
      arguments: {
        sql: "SELECT pg_relation_size('orders') > 0 AS a, pg_total_relation_size('public.orders') >= pg_table_size('orders') AS b, pg_indexes_size('orders') > 0 AS c, pg_size_pretty(pg_table_size('customers')) IS NOT NULL AS d",
      },
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ rows: [[true, true, true, true]] });
    expect(await company.checksum()).toBe(before);
  });

  it('still answers reads afterwards', async () => {
    const result = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT count(*) AS n FROM customers' },
    });
    expect(result.structuredContent).toMatchObject({ rows: [[200]] });
    expect(await company.checksum()).toBe(before);
  });
});
