import { parse } from 'libpg-query';
import type { SelectStmt } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import { relationKey, resolveStatement, viewColumnsMasked } from '../src/sql/resolve.ts';
import type { RelationInfo, Resolution, ResolverCatalog } from '../src/sql/resolve.ts';
import { SqlRefusedError, analyzeSql } from '../src/sql/guard.ts';
import { checkStatic } from '../src/sql/policy.ts';

// Name resolution on its own, over a catalog held in memory: what each reference denotes, and
// the masking, schema and catalog rules decided on that (the same rules run against a real
// PostgreSQL in masking.test.ts and noninterference.test.ts).

interface Fixture {
  readonly columns: readonly string[];
  readonly kind?: string;
  readonly view?: string;
  readonly policy?: readonly string[];
  readonly partitionKey?: readonly string[];
  readonly ancestorKeys?: readonly string[];
  readonly descendantSchemas?: readonly string[];
}

const EMPLOYEES = [
  'id',
  'name',
  'title',
  'department',
  'manager_id',
  'hired_on',
  'email',
  'national_id',
];

const FIXTURES: Record<string, Fixture> = {
  'public.customers': { columns: ['id', 'name', 'email', 'country', 'created_at'] },
  'public.employees': { columns: EMPLOYEES },
  'public.orders': { columns: ['id', 'customer_id', 'status', 'ordered_at', 'total'] },
  'public.products': { columns: ['id', 'sku', 'name', 'category', 'price'] },
  'public.payroll': {
    kind: 'p',
    columns: ['id', 'period', 'ssn', 'amount'],
    partitionKey: ['period'],
  },
  'public.payroll_2024': { columns: ['id', 'period', 'ssn', 'amount'], ancestorKeys: ['period'] },
  'public.tokens': { kind: 'p', columns: ['id', 'token'], partitionKey: ['token'] },
  'public.tokens_a': { columns: ['id', 'token'], ancestorKeys: ['token'] },
  'public.notes': { columns: ['id', 'body', 'secret'], policy: ['secret'] },
  'public.staff': {
    kind: 'v',
    columns: ['id', 'name', 'nid'],
    view: 'SELECT id, name, national_id AS nid FROM employees',
  },
  'public.staff_v2': {
    kind: 'v',
    columns: ['tax_ref', 'name'],
    view: 'SELECT s.nid AS tax_ref, s.name FROM staff s',
  },
  'public.staff_lower': {
    kind: 'v',
    columns: ['id', 'nid_lower'],
    view: 'SELECT id, lower(national_id) AS nid_lower FROM employees',
  },
  'public.staff_filtered': {
    kind: 'v',
    columns: ['id', 'name'],
    view: "SELECT id, name FROM employees WHERE national_id < 'NID-5'",
  },
  'public.staff_mv': {
    kind: 'm',
    columns: ['id', 'nid_lower'],
    view: 'SELECT id, lower(national_id) AS nid_lower FROM employees',
  },
  'public.salary_view': {
    kind: 'v',
    columns: ['employee_id', 'amount'],
    view: 'SELECT employee_id, amount FROM hr.salaries',
  },
  'hr.salaries': { columns: ['employee_id', 'amount', 'currency'] },
  'pg_catalog.pg_class': { columns: ['oid', 'relname', 'relnamespace', 'reltuples'] },
  'pg_catalog.pg_stats': {
    kind: 'v',
    columns: ['schemaname', 'tablename', 'attname', 'histogram_bounds'],
    view: 'SELECT nspname AS schemaname, relname AS tablename, relname AS attname, relname AS histogram_bounds FROM pg_catalog.pg_class, pg_catalog.pg_namespace',
  },
  'pg_catalog.pg_namespace': { columns: ['oid', 'nspname'] },
  'pg_catalog.pg_shadow': {
    kind: 'v',
    columns: ['usename', 'passwd'],
    view: 'SELECT relname AS usename, relname AS passwd FROM pg_catalog.pg_class',
  },
  'pg_catalog.pg_stat_activity': {
    kind: 'v',
    columns: ['pid', 'query'],
    view: 'SELECT oid AS pid, relname AS query FROM pg_catalog.pg_class',
  },
  'pg_catalog.pg_settings': {
    kind: 'v',
    columns: ['name', 'setting'],
    view: 'SELECT relname AS name, relname AS setting FROM pg_catalog.pg_class',
  },
};

/** POSTGRES_MASK_COLUMNS of the fixture, resolved: *.email, employees.national_id, payroll.ssn (and its partition), tokens.token (and its partition), notes.secret. */
const MASKED = [
  'public.customers.email',
  'public.employees.email',
  'public.employees.national_id',
  'public.payroll.ssn',
  'public.payroll_2024.ssn',
  'public.tokens.token',
  'public.tokens_a.token',
  'public.notes.secret',
];

let catalog: ResolverCatalog;

beforeAll(async () => {
  const infos = new Map<string, RelationInfo>();
  let oid = 16384;
  for (const [key, f] of Object.entries(FIXTURES)) {
    const [schema, name] = key.split('.') as [string, string];
    let definition: SelectStmt | undefined;
    if (f.view !== undefined) {
      const stmt = (await parse(f.view)).stmts![0]!.stmt as { SelectStmt: SelectStmt };
      definition = stmt.SelectStmt;
    }
    const columns = f.columns.map((c, i) => ({ name: c, attnum: i + 1 }));
    infos.set(relationKey(schema, name), {
      oid: oid++,
      schema,
      name,
      kind: f.kind ?? 'r',
      columns,
      definition,
      policyColumns: columns.filter((c) => f.policy?.includes(c.name)).map((c) => c.attnum),
      partitionKey: f.partitionKey ?? [],
      ancestorKeys: f.ancestorKeys ?? [],
      descendantSchemas: f.descendantSchemas ?? [],
    });
  }
  const masked = new Map<
    string,
    { schema: string; table: string; column: string; tableOid: number; attnum: number }
  >();
  for (const label of MASKED) {
    const [schema, table, column] = label.split('.') as [string, string, string];
    const info = infos.get(relationKey(schema, table))!;
    const attnum = info.columns.find((c) => c.name === column)!.attnum;
    masked.set(`${info.oid}:${attnum}`, { schema, table, column, tableOid: info.oid, attnum });
  }
  catalog = {
    relation: (schema, name) => infos.get(relationKey(schema, name)) ?? null,
    masked: (tableOid, attnum) => masked.get(`${tableOid}:${attnum}`),
    isFunction: (name) => ['to_json', 'row_to_json', 'jsonb_each', 'lower'].includes(name),
    searchPath: ['pg_catalog', 'public'],
    allowed: new Set(['public']),
    database: 'company',
  };
});

async function resolve(sql: string): Promise<Resolution> {
  const analysis = await analyzeSql(sql, { allowExplainAnalyze: false });
  checkStatic(analysis, { schemas: ['public'], allowFunctions: [] });
  return resolveStatement(analysis.select, catalog);
}

async function refusal(sql: string): Promise<SqlRefusedError> {
  try {
    await resolve(sql);
  } catch (error) {
    if (error instanceof SqlRefusedError) return error;
    throw error;
  }
  throw new Error(`accepted: ${sql}`);
}

/** The masked label of each answer column, null for a column that carries none. */
async function outputs(sql: string): Promise<ReadonlyArray<string | null>> {
  const resolution = await resolve(sql);
  expect(resolution.outputsExact).toBe(true);
  return resolution.outputs;
}

const E = 'public.employees.national_id';
const C = 'public.customers.email';

describe('masked values pass through unchanged to the answer, under any name', () => {
  it.each([
    ['SELECT email FROM customers', [C]],
    ['SELECT c.email AS contact, c.name FROM customers c', [C, null]],
    ['SELECT * FROM customers', [null, null, C, null, null]],
    ['SELECT c.*, 1 AS one FROM customers c', [null, null, C, null, null, null]],
    ['SELECT lower(name), email FROM customers ORDER BY 1', [null, C]],
    // Renamed by an alias column list, a subquery, a CTE, a join's alias list.
    ['SELECT nid FROM employees e(i, n, t, d, m, h, em, nid)', [E]],
    ['SELECT e.x FROM employees e(a, b, c, d, f, g, h, x)', [E]],
    ['SELECT s.x FROM (SELECT national_id AS x FROM employees) s', [E]],
    ['SELECT b FROM (SELECT id, national_id FROM employees) s(a, b)', [E]],
    ['WITH c AS (SELECT national_id AS x FROM employees) SELECT x FROM c', [E]],
    ['WITH c(a, b) AS (SELECT id, national_id FROM employees) SELECT b FROM c', [E]],
    ['SELECT * FROM (SELECT * FROM customers) s', [null, null, C, null, null]],
    ['WITH x AS (SELECT email FROM customers) SELECT * FROM x', [C]],
    ['SELECT j.q FROM (customers CROSS JOIN orders) AS j(a, b, q)', [C]],
    // A CTE named like the table it reads.
    [
      'WITH employees AS (SELECT national_id AS status FROM employees) SELECT status FROM employees',
      [E],
    ],
    // LATERAL.
    [
      'SELECT l.x FROM products p, LATERAL (SELECT national_id AS x FROM employees e WHERE e.id = p.id) l',
      [E],
    ],
    // Views and their renamed columns, views of views.
    ['SELECT nid FROM staff', [E]],
    ['SELECT * FROM staff', [null, null, E]],
    ['SELECT tax_ref FROM staff_v2', [E]],
    // Partitions: the mask follows the table to them.
    ['SELECT ssn FROM payroll_2024', ['public.payroll_2024.ssn']],
    ['SELECT ssn FROM payroll', ['public.payroll.ssn']],
    // A materialized view stores what it computed: masked, not computed at read.
    ['SELECT nid_lower FROM staff_mv', ['public.staff_mv.nid_lower']],
    // A column named like a masked one elsewhere is not masked.
    ['SELECT name AS email FROM products', [null]],
    ['SELECT email FROM (SELECT name AS email FROM products) p', [null]],
  ] as const)('%s', async (sql, expected) => {
    expect(await outputs(sql)).toEqual(expected);
  });

  it('masks the view column that passes a masked value through, by its own origin', async () => {
    const resolution = await resolve('SELECT * FROM staff');
    expect([...resolution.maskedOrigins]).toHaveLength(1);
    expect(resolution.touchesMasked).toBe(true);
  });

  it('keeps columns of other tables alone', async () => {
    expect((await resolve('SELECT lower(name) FROM products ORDER BY 1')).touchesMasked).toBe(
      false,
    );
    await expect(
      resolve("SELECT lower(name) FROM customers WHERE country = 'DE' ORDER BY 1"),
    ).resolves.toBeDefined();
    await expect(resolve('SELECT count(*) FROM customers')).resolves.toBeDefined();
    await expect(
      resolve(
        'SELECT id FROM customers c WHERE EXISTS (SELECT * FROM orders o WHERE o.customer_id = c.id)',
      ),
    ).resolves.toBeDefined();
    await expect(
      resolve('SELECT country, count(*) FROM customers GROUP BY 1'),
    ).resolves.toBeDefined();
    // EXISTS never reads its SELECT list.
    await expect(resolve('SELECT 1 WHERE EXISTS (SELECT * FROM employees)')).resolves.toBeDefined();
  });
});

describe('a masked value used anywhere else is refused, whatever it is called', () => {
  it.each([
    // Filters, sorts, groups, aggregates, transformations (the earlier name-based cases).
    "SELECT id FROM customers WHERE email LIKE 'a%'",
    'SELECT id FROM customers ORDER BY email',
    'SELECT email AS e FROM customers ORDER BY e',
    'SELECT id, name, email FROM customers ORDER BY 3',
    'SELECT * FROM customers ORDER BY 3',
    'SELECT DISTINCT ON (1) email FROM customers',
    'SELECT email, count(*) FROM customers GROUP BY 1',
    'SELECT email FROM customers GROUP BY email',
    'SELECT lower(email) FROM customers',
    "SELECT email || '' FROM customers",
    'SELECT email::int FROM customers',
    'SELECT length(c.email) FROM customers c',
    'SELECT (SELECT email FROM customers LIMIT 1)',
    'SELECT c FROM customers c',
    'SELECT row_to_json(c) FROM customers c',
    'SELECT to_json(c.*) FROM customers c',
    'SELECT (c).email FROM customers c',
    'SELECT a.id FROM customers a JOIN customers b USING (email)',
    'SELECT * FROM customers NATURAL JOIN employees',
    'SELECT email FROM customers UNION SELECT name FROM customers',
    'SELECT email FROM customers UNION ALL SELECT name FROM customers',
    'SELECT DISTINCT ON (email) id FROM customers',
    'SELECT DISTINCT email FROM customers',
    'SELECT id, rank() OVER (PARTITION BY email) FROM customers',
    'SELECT id FROM customers WINDOW w AS (ORDER BY email)',
    'SELECT max(email) FROM customers',
    'SELECT count(DISTINCT email) FROM customers',
    'SELECT id FROM customers HAVING max(email) > $1',
    // …renamed: an alias column list, in every clause.
    'SELECT lower(nid) FROM employees e(i, n, t, d, m, h, em, nid)',
    "SELECT i FROM employees e(i, n, t, d, m, h, em, nid) WHERE nid < 'NID-5'",
    'SELECT i FROM employees e(i, n, t, d, m, h, em, nid) ORDER BY nid',
    'SELECT nid::int FROM employees e(i, n, t, d, m, h, em, nid)',
    'SELECT 1 FROM employees a(i, n, t, d, m, h, em, nid) JOIN employees b(i, n, t, d, m, h, em, nid) USING (nid)',
    'SELECT z FROM (customers CROSS JOIN orders) AS j(a, b, z) WHERE z IS NULL',
    // …through a subquery, a CTE, a view, LATERAL.
    "SELECT 1 FROM (SELECT national_id AS x FROM employees) s WHERE x = 'NID-1'",
    "WITH c AS (SELECT national_id AS status FROM employees) SELECT 1 FROM c WHERE status > 'N'",
    "SELECT name FROM staff WHERE nid LIKE 'NID-1%'",
    'SELECT count(DISTINCT tax_ref) FROM staff_v2',
    'SELECT * FROM products p, LATERAL (SELECT 1 FROM employees e WHERE e.national_id = p.name) l',
    // A CTE named like a table does not hide the real one elsewhere in the statement.
    "SELECT id FROM employees WHERE national_id < 'NID-5' AND EXISTS (WITH employees AS (SELECT 1) SELECT 1)",
    "WITH e AS (SELECT 1) SELECT (SELECT count(*) FROM employees WHERE national_id < 'NID-5') FROM e",
    // Functional notation: t.f is f(t), a function of the whole row.
    'SELECT e.to_json FROM employees e',
    'SELECT c.row_to_json FROM customers c',
    // A view that computes from, or filters on, a masked column.
    'SELECT nid_lower FROM staff_lower',
    'SELECT * FROM staff_lower',
    'SELECT id FROM staff_filtered',
    // A table partitioned by a masked key, and its partitions.
    'SELECT id FROM tokens_a',
    'SELECT id FROM tokens ORDER BY id',
    // A row-security policy that filters on a masked column.
    'SELECT id FROM notes',
    // The row's position on disk moves with the masked values' sizes.
    'SELECT ctid FROM employees WHERE ctid > $1',
    // Sublinks and LIMIT.
    "SELECT id FROM customers WHERE id IN (SELECT id FROM customers WHERE email < 'm')",
    "SELECT 1 LIMIT (SELECT count(*) FROM employees WHERE national_id < 'NID-5')",
    "SELECT CASE WHEN national_id < 'NID-5' THEN 1 END FROM employees",
    "SELECT 1 FROM employees WHERE EXISTS (SELECT 1 WHERE national_id < 'NID-5')",
  ])('%s', async (sql) => {
    const error = await refusal(sql);
    expect(error.sqlRule, error.message).toBe('masked_column');
    expect(error.rule).toBe('sql:masked_column');
  });

  it('says what was masked, under which name, and where it was used', async () => {
    const error = await refusal(
      "SELECT i FROM employees e(i, n, t, d, m, h, em, nid) WHERE nid < 'x'",
    );
    expect(error.message).toMatch(
      /nid is masked \(public\.employees\.national_id\) and is used in WHERE/,
    );
    const view = await refusal("SELECT 1 FROM staff WHERE nid = 'x'");
    expect(view.message).toMatch(/nid is masked \(public\.employees\.national_id\)/);
    // Inside a view's definition (text the caller is not shown) only the view is named.
    const inside = await refusal('SELECT id FROM staff_filtered');
    expect(inside.message).toMatch(
      /the view public\.staff_filtered uses the masked column public\.employees\.national_id in its definition/,
    );
  });
});

describe('relations resolve as PostgreSQL resolves them', () => {
  it.each([
    ['SELECT * FROM pg_shadow', 'system_catalog'],
    ['SELECT * FROM pg_stat_activity', 'system_catalog'],
    ['SELECT * FROM pg_class', 'system_catalog'],
    // A CTE named like a catalog in another scope does not hide the real one.
    [
      'SELECT relname FROM pg_class WHERE EXISTS (WITH pg_class AS (SELECT 1) SELECT 1)',
      'system_catalog',
    ],
    ['SELECT * FROM (WITH pg_settings AS (SELECT 1) SELECT 1) a, pg_settings', 'system_catalog'],
    [
      'SELECT histogram_bounds FROM pg_stats WHERE false AND EXISTS (WITH pg_stats AS (SELECT 1) SELECT 1)',
      'system_catalog',
    ],
    ['WITH x AS (SELECT * FROM pg_stat_activity) SELECT 1', 'system_catalog'],
    ['WITH pg_roles AS (SELECT * FROM pg_class) SELECT * FROM pg_roles', 'system_catalog'],
  ] as const)('refuses %s (%s)', async (sql, rule) => {
    expect((await refusal(sql)).sqlRule).toBe(rule);
  });

  it('lets a CTE named like a catalog stand for itself in its scope', async () => {
    await expect(
      resolve('WITH pg_class AS (SELECT 1 AS relname) SELECT relname FROM pg_class'),
    ).resolves.toBeDefined();
    await expect(resolve('WITH pg_tmp AS (SELECT 1) SELECT * FROM pg_tmp')).resolves.toBeDefined();
  });

  it('a non-recursive CTE sees only the CTEs before it; a recursive one sees all', async () => {
    // `b` reads the table employees, not the CTE defined after it.
    const later = await refusal(
      "WITH b AS (SELECT national_id AS x FROM employees), employees AS (SELECT 'x' AS national_id) SELECT 1 FROM b WHERE x > 'N'",
    );
    expect(later.sqlRule).toBe('masked_column');
    await expect(
      resolve(
        'WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n FROM t',
      ),
    ).resolves.toBeDefined();
  });

  it('reads a hidden schema only through a view the DBA made, and says so', async () => {
    const resolution = await resolve('SELECT amount FROM salary_view');
    expect(resolution.relations.map((r) => [`${r.info.schema}.${r.info.name}`, r.through])).toEqual(
      [
        ['public.salary_view', undefined],
        ['hr.salaries', 'public.salary_view'],
      ],
    );
  });

  it('asks for relations it has not looked up, and resolves once it has', async () => {
    const partial: ResolverCatalog = {
      ...catalog,
      relation: (s, n) => (n === 'staff' ? undefined : catalog.relation(s, n)),
    };
    const analysis = await analyzeSql('SELECT nid FROM staff', { allowExplainAnalyze: false });
    expect(resolveStatement(analysis.select, partial).missing).toEqual([
      relationKey('pg_catalog', 'staff'),
    ]);
  });
});

describe('what cannot be resolved with certainty', () => {
  it('keeps every possibility of a column a function in FROM might provide', async () => {
    // `national_id` could be jsonb_each's (it is not known here) or employees': masked.
    expect(
      (await refusal("SELECT 1 FROM employees, jsonb_each('{}') j WHERE national_id > 'N'"))
        .sqlRule,
    ).toBe('masked_column');
    // A star over such a function leaves the positions after it unknown.
    const starred = await resolve("SELECT * FROM jsonb_each('{}') j, employees");
    expect(starred.outputsExact).toBe(false);
    expect([...starred.maskedNames]).toEqual(['email', 'national_id']);
    expect((await refusal("SELECT * FROM jsonb_each('{}') j, employees ORDER BY 3")).sqlRule).toBe(
      'masked_column',
    );
    // With a column definition list its columns are known.
    await expect(
      resolve("SELECT a FROM employees, jsonb_to_record('{}') AS r(a int) WHERE a > 1"),
    ).resolves.toBeDefined();
  });

  it('reports a reference to nothing it knows, and whether a masked column is in reach', async () => {
    // The service then looks the catalog up afresh (masking.test.ts) before leaving the error
    // to PostgreSQL.
    expect(await resolve('SELECT nosuch FROM employees')).toMatchObject({
      unresolved: ['nosuch'],
      maskedInReach: true,
    });
    expect(await resolve('SELECT c.nosuch FROM customers c')).toMatchObject({
      unresolved: ['c.nosuch'],
      maskedInReach: true,
    });
    expect(await resolve('SELECT e.nosuch FROM products e')).toMatchObject({
      maskedInReach: false,
    });
  });
});

describe('the schema tools see view columns as queries do', () => {
  it('marks a view column masked when it passes a masked value through or computes from one', () => {
    const staff = catalog.relation('public', 'staff')!;
    expect([...viewColumnsMasked(staff, catalog).masked]).toEqual([3]);
    const lower = catalog.relation('public', 'staff_lower')!;
    expect([...viewColumnsMasked(lower, catalog).masked]).toEqual([2]);
  });
});
