import { describe, expect, it } from 'vitest';
import { SqlRefusedError, analyzeSql } from '../src/sql/guard.ts';
import type { SqlRule } from '../src/sql/guard.ts';
import { checkStatic } from '../src/sql/policy.ts';

// Layer 2 on its own: the parser and the static rules, with no database behind them. (What
// needs the catalog — unqualified names, masking — is in resolve.test.ts.)

const options = { allowExplainAnalyze: false };
const policy = { schemas: ['public', 'sales'], allowFunctions: [] };

async function refusal(sql: string, opts = options): Promise<SqlRefusedError> {
  try {
    const analysis = await analyzeSql(sql, opts);
    checkStatic(analysis, policy);
  } catch (error) {
    if (error instanceof SqlRefusedError) return error;
    throw error;
  }
  throw new Error(`accepted: ${sql}`);
}

async function expectRule(sql: string, rule: SqlRule, opts = options): Promise<void> {
  const error = await refusal(sql, opts);
  expect(error.sqlRule, `${sql} → ${error.message}`).toBe(rule);
  expect(error.message).toContain(`rule ${rule}`);
  expect(error.code).toBe('sql_refused');
}

describe('statement shape', () => {
  it.each([
    'SELECT 1',
    'select * from customers where id = $1',
    'WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b',
    'SELECT 1 UNION ALL SELECT 2 ORDER BY 1',
    'VALUES (1, 2), (3, 4)',
    'TABLE customers',
    'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total) FROM orders',
    'SELECT id, rank() OVER (PARTITION BY status ORDER BY total DESC) FROM orders',
    'SELECT * FROM orders o JOIN LATERAL (SELECT * FROM order_items i WHERE i.order_id = o.id LIMIT 1) x ON true',
    'WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT * FROM t',
    'SELECT 1; ',
    '/* ; */ SELECT 1 -- trailing ; comment',
    'EXPLAIN SELECT * FROM orders',
    'EXPLAIN (FORMAT JSON, VERBOSE) SELECT 1',
    'EXPLAIN (ANALYZE false) SELECT 1',
    'EXPLAIN (ANALYZE off) SELECT 1',
    "SELECT 'COMMIT; DROP TABLE x' AS s",
    'SELECT $$;$$ AS s',
  ])('accepts %s', async (sql) => {
    const analysis = await analyzeSql(sql, options);
    expect(() => checkStatic(analysis, policy)).not.toThrow();
  });

  it.each([
    ['SELECT 1; COMMIT; DROP TABLE users;', 'single_statement'],
    ['COMMIT; DROP SCHEMA public CASCADE;', 'single_statement'],
    ['SELECT 1; END; DELETE FROM orders', 'single_statement'],
    ['ROLLBACK; UPDATE products SET price = 0', 'single_statement'],
    ['SELECT 1; SELECT 2', 'single_statement'],
    ['SELECT 1 --\n; DROP TABLE customers', 'single_statement'],
    ['SELECT $$;$$; DROP TABLE customers', 'single_statement'],
    ['/* harmless */ COMMIT; DROP TABLE customers', 'single_statement'],
    ['', 'syntax'],
    [' ; ; -- nothing', 'single_statement'],
    ['SELEC 1', 'syntax'],
    ["SELECT 'unterminated", 'syntax'],
    ['COMMIT', 'statement_type'],
    ['SET TRANSACTION READ WRITE', 'statement_type'],
    ['SET default_transaction_read_only = off', 'statement_type'],
    ['RESET ALL', 'statement_type'],
    ["COPY customers TO PROGRAM 'touch /tmp/pwned'", 'statement_type'],
    ["COPY (SELECT 1) TO '/tmp/pwned'", 'statement_type'],
    ['DO $$ BEGIN DELETE FROM orders; END $$', 'statement_type'],
    ['CALL purge()', 'statement_type'],
    ['PREPARE p AS DELETE FROM orders', 'statement_type'],
    ['EXECUTE p', 'statement_type'],
    ['LISTEN x', 'statement_type'],
    ["NOTIFY x, 'y'", 'statement_type'],
    ['DELETE FROM orders', 'statement_type'],
    ["INSERT INTO customers (name) VALUES ('x')", 'statement_type'],
    [
      'MERGE INTO products p USING products q ON p.id = q.id WHEN MATCHED THEN DELETE',
      'statement_type',
    ],
    ['CREATE TABLE stolen AS SELECT * FROM customers', 'statement_type'],
    ['DECLARE c CURSOR FOR SELECT 1', 'statement_type'],
    ['TRUNCATE orders', 'statement_type'],
    ['LOCK TABLE customers', 'statement_type'],
    ['VACUUM orders', 'statement_type'],
    ['GRANT SELECT ON customers TO public', 'statement_type'],
    ['EXPLAIN DELETE FROM orders', 'statement_type'],
    ['EXPLAIN ANALYZE DELETE FROM orders', 'statement_type'],
    ['WITH d AS (DELETE FROM order_items RETURNING *) SELECT count(*) FROM d', 'data_modifying'],
    ['WITH u AS (UPDATE products SET price = 0 RETURNING 1) SELECT * FROM u', 'data_modifying'],
    [
      "WITH i AS (INSERT INTO customers (name) VALUES ('x') RETURNING id) SELECT id FROM i",
      'data_modifying',
    ],
    [
      'WITH a AS (WITH b AS (DELETE FROM t RETURNING 1) SELECT * FROM b) SELECT * FROM a',
      'data_modifying',
    ],
    ['SELECT * FROM (WITH d AS (DELETE FROM t RETURNING 1) SELECT * FROM d) s', 'data_modifying'],
    ['SELECT * INTO stolen FROM customers', 'select_into'],
    ['SELECT * FROM customers FOR UPDATE', 'locking_clause'],
    ['SELECT * FROM customers FOR KEY SHARE SKIP LOCKED', 'locking_clause'],
    ['SELECT * FROM (SELECT * FROM customers FOR SHARE) s', 'locking_clause'],
    ['(SELECT 1 FROM t FOR NO KEY UPDATE) UNION SELECT 2', 'locking_clause'],
    ['EXPLAIN ANALYZE SELECT 1', 'explain_analyze'],
    ['EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1', 'explain_analyze'],
    ['EXPLAIN (ANALYZE on) SELECT 1', 'explain_analyze'],
  ] as const)('refuses %j (%s)', async (sql, rule) => {
    await expectRule(sql, rule);
  });

  it('allows EXPLAIN ANALYZE of a SELECT only when configured', async () => {
    const analysis = await analyzeSql('EXPLAIN ANALYZE SELECT 1', { allowExplainAnalyze: true });
    expect(analysis).toMatchObject({ kind: 'explain', analyze: true });
    await expectRule('EXPLAIN ANALYZE DELETE FROM t', 'statement_type', {
      allowExplainAnalyze: true,
    });
  });

  it('names the position of a syntax error and the statement it refused', async () => {
    expect((await refusal('SELECT * FORM customers')).message).toMatch(/at character \d+/);
    expect((await refusal('DO $$ BEGIN END $$')).message).toContain('a DO block');
    expect((await refusal('SELECT 1; SELECT 2')).message).toContain('this has 2');
  });

  it('keeps the statement text without the trailing semicolon, multibyte-safe', async () => {
    const analysis = await analyzeSql("SELECT 'é€😀' AS x ;  ", options);
    expect(analysis.statement).toBe("SELECT 'é€😀' AS x");
  });
});

describe('functions, wherever they are called', () => {
  const denied = [
    "SELECT * FROM pg_read_file('/etc/passwd')",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_catalog.pg_read_file('/etc/passwd')",
    'SELECT "pg_read_file"(\'/etc/passwd\')',
    "SELECT PG_CATALOG.PG_READ_FILE('/etc/passwd')",
    'SELECT U&"\\0070g_read_file"(\'/etc/passwd\')',
    "SELECT 1 WHERE length(pg_read_binary_file('/etc/passwd')) > 0",
    "SELECT * FROM customers c JOIN LATERAL pg_ls_dir('.') d ON true",
    "SELECT (SELECT max(x) FROM pg_stat_file('/etc/passwd') x)",
    "WITH a AS (SELECT lo_import('/etc/passwd') AS oid) SELECT * FROM a",
    "SELECT lo_export(1, '/tmp/x')",
    "SELECT lo_from_bytea(0, 'x')",
    "SELECT dblink_exec('dbname=postgres', 'DROP TABLE customers')",
    "SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    'SELECT pg_reload_conf()',
    'SELECT pg_advisory_lock(42)',
    'SELECT pg_try_advisory_xact_lock(42)',
    "SELECT nextval('orders_id_seq')",
    "SELECT setval('orders_id_seq', 1)",
    'SELECT pg_terminate_backend(pid) FROM sales.sessions',
    'SELECT pg_cancel_backend(1)',
    "SELECT pg_notify('x', 'y')",
    'SELECT pg_sleep(60)',
    "SELECT pg_sleep_for('1 hour')",
    "SELECT query_to_xml('DELETE FROM orders RETURNING 1', true, true, '')",
    "SELECT table_to_xml('hr.salaries', true, true, '')",
    "SELECT ts_stat('SELECT 1')",
    "SELECT pg_import_system_collations('pg_catalog')",
    "SELECT pg_logical_emit_message(true, 'x', 'y')",
    'SELECT txid_current()',
    'SELECT CASE WHEN true THEN pg_sleep(1) END',
    'SELECT count(*) FILTER (WHERE pg_advisory_lock(1) IS NULL) FROM orders',
    'SELECT * FROM orders ORDER BY pg_sleep(1)',
    'SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id AND pg_sleep(1) IS NULL',
    'VALUES (pg_sleep(1))',
    'EXPLAIN SELECT pg_sleep(1)',
  ];
  it.each(denied)('refuses %s', async (sql) => {
    await expectRule(sql, 'function_denied');
  });

  it('collects every call for the volatility check, FROM and nested included', async () => {
    const analysis = await analyzeSql(
      'SELECT lower(a), (SELECT upper(b)) FROM f1() x, LATERAL s.f2(x.a) y WHERE g(1) ORDER BY h()',
      options,
    );
    expect(analysis.functions).toEqual(
      expect.arrayContaining([
        { name: 'lower' },
        { name: 'upper' },
        { name: 'f1' },
        { schema: 's', name: 'f2' },
        { name: 'g' },
        { name: 'h' },
      ]),
    );
    const ops = await analyzeSql(
      'SELECT 1 === 2, a OPERATOR(sales.+) b, x BETWEEN 1 AND 2',
      options,
    );
    expect(ops.operators).toEqual([{ name: '===' }, { schema: 'sales', name: '+' }]);
  });
});

describe('schemas', () => {
  it.each([
    ['SELECT * FROM hr.salaries', 'schema_not_allowed'],
    ['SELECT * FROM public.customers c JOIN hr.salaries s ON true', 'schema_not_allowed'],
    ['SELECT (SELECT count(*) FROM hr.salaries)', 'schema_not_allowed'],
    ['SELECT hr.raise()', 'schema_not_allowed'],
    ['SELECT * FROM pg_catalog.pg_authid', 'system_catalog'],
    ['SELECT * FROM information_schema.tables', 'system_catalog'],
    ['WITH hr AS (SELECT 1) SELECT * FROM hr.salaries', 'schema_not_allowed'],
  ] as const)('refuses %s (%s)', async (sql, rule) => {
    await expectRule(sql, rule);
  });

  it('accepts the allowed schemas, pg_catalog functions and CTEs named like catalogs', async () => {
    for (const sql of [
      'SELECT * FROM sales.leads l JOIN public.customers c ON true',
      'SELECT pg_catalog.lower(name) FROM customers',
      'WITH pg_tmp AS (SELECT 1) SELECT * FROM pg_tmp',
    ]) {
      const analysis = await analyzeSql(sql, options);
      expect(() => checkStatic(analysis, policy)).not.toThrow();
    }
  });
});

describe('the functions behind refused system views', () => {
  it.each([
    'SELECT * FROM pg_stat_get_activity(NULL)',
    'SELECT pg_stat_get_numscans(1259)',
    'SELECT * FROM pg_catalog.pg_lock_status()',
    'SELECT * FROM pg_show_all_settings()',
    'SELECT * FROM pg_hba_file_rules()',
    'SELECT * FROM pg_prepared_statement()',
    'SELECT * FROM pg_get_backend_memory_contexts()',
    'SELECT * FROM pg_control_system()',
  ])('refuses %s like its view', async (sql) => {
    await expectRule(sql, 'system_catalog');
  });
});

describe('names looked up in the catalog', () => {
  it.each([
    ["SELECT 'hr.salaries'::regclass", 'schema_not_allowed'],
    ["SELECT 'HR.Salaries'::pg_catalog.regclass", 'schema_not_allowed'],
    ['SELECT \'"hr"."salaries"\'::regclass', 'schema_not_allowed'],
    ["SELECT CAST('hr.salaries' AS regclass)", 'schema_not_allowed'],
    ["SELECT regclass 'hr.salaries'", 'schema_not_allowed'],
    ["SELECT 'hr.f(int)'::regprocedure", 'schema_not_allowed'],
    ["SELECT 'hr.t'::regtype", 'schema_not_allowed'],
    ["SELECT 'hr'::regnamespace", 'schema_not_allowed'],
    ["SELECT to_regclass('hr.salaries')", 'schema_not_allowed'],
    ["SELECT to_regnamespace('hr')", 'schema_not_allowed'],
    ["SELECT has_table_privilege('hr.salaries', 'SELECT')", 'schema_not_allowed'],
    ["SELECT has_schema_privilege('hr', 'USAGE')", 'schema_not_allowed'],
    ["SELECT pg_relation_size('hr.salaries')", 'schema_not_allowed'],
    // A definition as text may name what it reads outside the allowed schemas: refused whole.
    ["SELECT pg_get_viewdef('hr.v')", 'system_catalog'],
    ["SELECT pg_get_viewdef('public.customers_v')", 'system_catalog'],
    ["SELECT pg_get_object_address('table', '{hr,salaries}', '{}')", 'system_catalog'],
    ["SELECT 'pg_catalog.pg_authid'::regclass", 'system_catalog'],
    ["SELECT ('hr.' || 'salaries')::regclass", 'name_lookup'],
    ['SELECT to_regclass($1)', 'name_lookup'],
    // By oid: no schema to check, and counting through oids reaches every object.
    ['SELECT 16384::regclass', 'name_lookup'],
    ["SELECT '16384'::regclass", 'name_lookup'],
    ['SELECT pg_relation_size(16384)', 'name_lookup'],
    ['SELECT pg_get_viewdef(16384)', 'system_catalog'],
    ['SELECT format_type(16386, NULL)', 'name_lookup'],
    ['SELECT pg_describe_object(1259, 16384, 0)', 'name_lookup'],
    ['SELECT has_table_privilege(current_user, 16384, $1)', 'name_lookup'],
    ['SELECT g::regclass FROM generate_series(16384, 16500) g', 'name_lookup'],
    ["SELECT pg_get_functiondef('hr.f'::regproc)", 'system_catalog'],
    ["SELECT has_table_privilege('x', 'hr.salaries', 'SELECT')", 'schema_not_allowed'],
    // Input-validation functions: the value is looked up when the type reads names, and the
    // type argument is a type name looked up itself (spelled as PostgreSQL reads one).
    ["SELECT pg_input_is_valid('hr.salaries', 'regclass')", 'schema_not_allowed'],
    ["SELECT pg_input_is_valid('hr.salaries', ' pg_catalog.\"regclass\" ')", 'schema_not_allowed'],
    ["SELECT pg_input_error_info('hr.t', 'RegType')", 'schema_not_allowed'],
    ["SELECT pg_input_is_valid('1', 'hr.t')", 'schema_not_allowed'],
    ["SELECT pg_input_is_valid('1', 'hr.t[]')", 'schema_not_allowed'],
    ["SELECT pg_input_is_valid('1', 'int; DROP TABLE x')", 'name_lookup'],
    ["SELECT pg_input_is_valid('1', $1)", 'name_lookup'],
    ["SELECT pg_input_is_valid($1, 'regclass')", 'name_lookup'],
    ["SELECT pg_input_is_valid('{hr.salaries}', 'regclass[]')", 'name_lookup'],
    ["SELECT '{hr.salaries,customers}'::regclass[]", 'name_lookup'],
    // A hidden table's row type, or any type of another schema.
    ['SELECT NULL::hr.salaries', 'schema_not_allowed'],
    ['SELECT CAST(NULL AS hr.salaries)', 'schema_not_allowed'],
    ['SELECT * FROM json_to_record(NULL) AS r(a hr.t)', 'schema_not_allowed'],
    // Roles are not shown: looking one up by name is refused.
    ["SELECT 'postgres'::regrole", 'name_lookup'],
    ["SELECT to_regrole('postgres')", 'name_lookup'],
    ["SELECT pg_has_role('postgres', 'MEMBER')", 'name_lookup'],
    ["SELECT has_table_privilege('postgres', 'customers', 'SELECT')", 'name_lookup'],
    // Text search configurations are objects in schemas too.
    ["SELECT to_tsvector('hr.cfg', 'text')", 'schema_not_allowed'],
    ["SELECT ts_lexize('hr.dict', 'word')", 'schema_not_allowed'],
    ["SELECT pg_basetype('hr.t')", 'schema_not_allowed'],
  ] as const)('refuses %s (rule %s)', async (sql, rule) => {
    await expectRule(sql, rule);
  });

  it.each([
    "SELECT 'customers'::regclass",
    "SELECT 'public.customers'::regclass",
    "SELECT 'sales.orders'::regclass::oid",
    "SELECT to_regclass('public.customers')",
    "SELECT has_table_privilege('public.customers', 'SELECT, INSERT')",
    "SELECT has_schema_privilege('sales', 'USAGE WITH GRANT OPTION')",
    "SELECT has_column_privilege('public.customers', 2, 'SELECT')",
    "SELECT pg_size_pretty(pg_relation_size('customers'::regclass))",
    "SELECT split_part('hr.salaries', '.', 1)",
    "SELECT pg_input_is_valid('42', 'integer')",
    "SELECT pg_input_is_valid('{1,2}', 'int[]')",
    "SELECT pg_input_is_valid('customers', 'regclass')",
    "SELECT to_tsvector('english', 'the text'), ts_headline('the text', 'text'::tsquery)",
    "SELECT has_table_privilege(current_user, 'customers', 'SELECT')",
    'SELECT NULL::public.customers, NULL::pg_catalog.int4',
  ])('accepts %s', async (sql) => {
    const analysis = await analyzeSql(sql, options);
    expect(() => checkStatic(analysis, policy)).not.toThrow();
  });

  it('collects every type a statement names, for the catalog rules', async () => {
    const analysis = await analyzeSql(
      "SELECT ROW(1)::evil::int, 'x'::sales.safe_text, CAST(a AS public.t2) FROM f() AS x(a my_type)",
      options,
    );
    expect(analysis.types.map((t) => (t.schema ? `${t.schema}.${t.name}` : t.name))).toEqual(
      expect.arrayContaining([
        'evil',
        'pg_catalog.int4',
        'sales.safe_text',
        'public.t2',
        'my_type',
      ]),
    );
  });
});

describe('values built from constants (docs/adr/0024-huge-values.md)', () => {
  const sized = { ...policy, maxValueBytes: 8 * 1024 * 1024 };
  const check = async (sql: string) => checkStatic(await analyzeSql(sql, options), sized);

  it.each([
    "SELECT repeat('x', 100000000)",
    'SELECT repeat(name, 9000000) FROM customers',
    "SELECT repeat(repeat('x', 10000), 20000)",
    "SELECT lpad('x', 200000000)",
    "SELECT rpad('', 5000000, 'é')",
    "SELECT repeat('ab', 3000000) || repeat('cd', 3000000)",
    "SELECT concat(repeat('a', 5000000), repeat('b', 5000000))",
    'SELECT array_fill(0, ARRAY[100000, 1000])',
    "SELECT string_agg(repeat('y', 1000), ',') FROM generate_series(1, 300000)",
    "SELECT string_agg(x, ',') FROM (SELECT repeat('y', 1000) AS x FROM generate_series(1, 10000)) s",
    'WITH s AS (SELECT g FROM generate_series(1, 1000) g) SELECT array_agg(repeat(g::text, 40000)) FROM s',
    "SELECT json_agg(repeat('z', 100)) FROM generate_series(1, 1000) a CROSS JOIN generate_series(1, 1000) b",
    "SELECT (SELECT string_agg(repeat('y', 10000), '') FROM generate_series(1, 1000)) AS sub",
    "SELECT string_agg(repeat('y', 1000), '') FROM (SELECT 1 FROM generate_series(1, 10000) UNION ALL SELECT 2) u",
  ])('refuses %s (rule value_size)', async (sql) => {
    await expect(check(sql)).rejects.toMatchObject({ sqlRule: 'value_size' });
  });

  it.each([
    "SELECT repeat('-', 40), lpad(id::text, 6, '0') FROM customers",
    "SELECT string_agg(g::text, ',') FROM generate_series(1, 100000) g",
    "SELECT string_agg(name, ',') FROM customers",
    'SELECT count(*) FROM generate_series(1, 100000000)',
    "SELECT repeat('█', (count(*) / 10)::int) FROM orders GROUP BY status",
    'SELECT array_agg(x) FROM generate_series(1, 1000) x, generate_series(1, 100) y WHERE x < 3',
  ])('accepts %s', async (sql) => {
    await expect(check(sql)).resolves.toBeUndefined();
  });
});
