/**
 * Statements for the non-interference test (noninterference.test.ts): every road to a masked
 * value (how a statement reaches it: renamed, shadowed, through a view, a partition…) combined
 * with every sink (what it does with it: projects, filters, sorts, groups, aggregates, casts,
 * explains…), plus the roads to hidden schemas and system catalogs. Over the databases of
 * test/fixtures/masking.sql.
 */

/** How a statement reaches a masked value. */
export interface Road {
  readonly name: string;
  /** A WITH clause the road needs (without the keyword). */
  readonly with?: string;
  readonly from: string;
  /** A reference to the masked value. */
  readonly m: string;
  /** A reference to a column that carries no masked value (for ordering). */
  readonly id: string;
  /** A value that splits the masked values in two (as an SQL literal). */
  readonly mid: string;
  /** A condition the road adds (a CTE shadowing a table elsewhere in the statement). */
  readonly where?: string;
}

const NID = "'NID-5'";
const EMPLOYEES_AS = 'e(i, n, t, d, mg, h, em, nid)';

export const ROADS: readonly Road[] = [
  { name: 'direct', from: 'employees', m: 'national_id', id: 'id', mid: NID },
  { name: 'qualified', from: 'employees e', m: 'e.national_id', id: 'e.id', mid: NID },
  { name: 'quoted', from: '"employees" "E"', m: '"E"."national_id"', id: '"E".id', mid: NID },
  { name: 'alias column list', from: `employees ${EMPLOYEES_AS}`, m: 'nid', id: 'i', mid: NID },
  {
    name: 'alias column list, qualified',
    from: `employees ${EMPLOYEES_AS}`,
    m: 'e.nid',
    id: 'e.i',
    mid: NID,
  },
  {
    name: 'subquery rename',
    from: '(SELECT id AS k, national_id AS x FROM employees) s',
    m: 's.x',
    id: 's.k',
    mid: NID,
  },
  {
    name: 'subquery column list',
    from: '(SELECT id, national_id FROM employees) s(k, x)',
    m: 'x',
    id: 'k',
    mid: NID,
  },
  {
    name: 'CTE rename',
    with: 'c AS (SELECT id AS k, national_id AS x FROM employees)',
    from: 'c',
    m: 'x',
    id: 'k',
    mid: NID,
  },
  {
    name: 'CTE named like the table it reads',
    with: 'employees AS (SELECT id, national_id AS name FROM employees)',
    from: 'employees',
    m: 'name',
    id: 'id',
    mid: NID,
  },
  {
    name: 'CTE named like another table',
    with: 'orders AS (SELECT id, national_id AS status FROM employees)',
    from: 'orders',
    m: 'status',
    id: 'id',
    mid: NID,
  },
  {
    name: 'a CTE shadowing the table in another scope',
    from: 'employees',
    m: 'national_id',
    id: 'id',
    mid: NID,
    where: 'EXISTS (WITH employees AS (SELECT 1) SELECT 1)',
  },
  { name: 'view rename', from: 'staff', m: 'nid', id: 'id', mid: NID },
  { name: 'view of a view', from: 'staff_v2 v', m: 'v.tax_ref', id: 'v.name', mid: NID },
  { name: 'materialized view', from: 'staff_mv', m: 'national_id', id: 'id', mid: NID },
  {
    name: 'joined alias list',
    from: '(employees CROSS JOIN (SELECT 1) o) AS j(i, n, t, d, mg, h, em, z, one)',
    m: 'z',
    id: 'i',
    mid: NID,
  },
  {
    name: 'LATERAL',
    from: 'products p, LATERAL (SELECT id AS k, national_id AS x FROM employees e WHERE e.id = p.id) l',
    m: 'l.x',
    id: 'l.k',
    mid: NID,
  },
  {
    name: 'join USING',
    from: 'employees a JOIN staff b USING (id)',
    m: 'b.nid',
    id: 'id',
    mid: NID,
  },
  { name: 'partition', from: 'payroll_2024', m: 'ssn', id: 'id', mid: "'SSN-5'" },
  { name: 'partitioned table', from: 'payroll', m: 'ssn', id: 'id', mid: "'SSN-5'" },
  { name: 'inheritance child', from: 'visitors', m: 'badge', id: 'id', mid: "'B-5'" },
  { name: 'inheritance parent', from: 'people', m: 'badge', id: 'id', mid: "'B-5'" },
  { name: 'another masked table', from: 'customers c', m: 'c.email', id: 'c.id', mid: "'m'" },
  {
    name: 'UNION ALL',
    from: "(SELECT id, national_id AS x FROM employees UNION ALL SELECT 0, 'NID-0000000') u",
    m: 'u.x',
    id: 'u.id',
    mid: NID,
  },
  // Roads whose rows depend on masked values even where nothing masked is selected.
  { name: 'a view filtering on it', from: 'staff_filtered', m: 'name', id: 'id', mid: "'E'" },
  { name: 'a row-security policy on it', from: 'notes', m: 'body', id: 'id', mid: "'note 5'" },
  { name: 'partitioned by it', from: 'tokens', m: 'id::text', id: 'id', mid: "'5'" },
  // Values the table derives from a masked column itself (generated columns).
  { name: 'a stored generated column', from: 'identities', m: 'nid_upper', id: 'id', mid: NID },
  {
    name: 'a virtual generated column',
    from: 'identities i',
    m: 'i.nid_lower',
    id: 'i.id',
    mid: "'nid-5'",
  },
  {
    name: 'a generated length, renamed',
    from: 'identities AS g(k, n, u, l, len)',
    m: 'len::text',
    id: 'k',
    mid: "'5'",
  },
];

/** What a statement does with the masked value, as the tool and SQL it calls. */
export interface Sink {
  readonly name: string;
  build(road: Road): { tool: 'postgres_query' | 'postgres_explain'; sql: string };
}

/** A SELECT over the road: its WITH, FROM and condition, with the sink's parts. */
function select(
  road: Road,
  parts: { select: string; where?: string; tail?: string; join?: string },
): string {
  const where = [road.where, parts.where].filter((w) => w !== undefined).join(' AND ');
  return [
    road.with === undefined ? '' : `WITH ${road.with}`,
    `SELECT ${parts.select} FROM ${road.from}`,
    parts.join ?? '',
    where === '' ? '' : `WHERE ${where}`,
    parts.tail ?? '',
  ]
    .filter((p) => p !== '')
    .join(' ');
}

const query = (sql: string) => ({ tool: 'postgres_query' as const, sql });

export const SINKS: readonly Sink[] = [
  // Controls: what the road allows on its other columns (answered alike in both worlds).
  { name: 'control: count', build: (r) => query(select(r, { select: 'count(*)' })) },
  {
    name: 'control: filter and sort',
    build: (r) =>
      query(
        select(r, { select: r.id, where: `${r.id}::text < '3'`, tail: `ORDER BY ${r.id} LIMIT 5` }),
      ),
  },
  {
    name: 'control: plan',
    build: (r) => ({
      tool: 'postgres_explain',
      sql: select(r, { select: r.id, tail: `ORDER BY ${r.id}` }),
    }),
  },
  // What is done with the masked value.
  {
    name: 'projected',
    build: (r) => query(select(r, { select: `${r.id}, ${r.m}`, tail: `ORDER BY ${r.id}` })),
  },
  { name: 'star', build: (r) => query(select(r, { select: '*', tail: `ORDER BY ${r.id}` })) },
  {
    name: 'WHERE =',
    build: (r) => query(select(r, { select: 'count(*)', where: `${r.m} = ${r.mid}` })),
  },
  {
    name: 'WHERE <',
    build: (r) =>
      query(select(r, { select: `${r.id}`, where: `${r.m} < ${r.mid}`, tail: `ORDER BY ${r.id}` })),
  },
  {
    name: 'LIKE',
    build: (r) => query(select(r, { select: 'count(*)', where: `${r.m} LIKE '%1%'` })),
  },
  {
    name: 'regex',
    build: (r) => query(select(r, { select: 'count(*)', where: `${r.m} ~ '[13579]$'` })),
  },
  {
    name: 'IS NULL',
    build: (r) => query(select(r, { select: 'count(*)', where: `${r.m} IS NULL` })),
  },
  {
    name: 'ORDER BY',
    build: (r) => query(select(r, { select: r.id, tail: `ORDER BY ${r.m} LIMIT 3` })),
  },
  {
    name: 'ORDER BY position',
    build: (r) => query(select(r, { select: `${r.m}, ${r.id}`, tail: 'ORDER BY 1 LIMIT 3' })),
  },
  {
    name: 'ORDER BY expression',
    build: (r) =>
      query(select(r, { select: r.id, tail: `ORDER BY coalesce(${r.m}, '') DESC LIMIT 3` })),
  },
  {
    name: 'GROUP BY',
    build: (r) =>
      query(select(r, { select: 'count(*)', tail: `GROUP BY ${r.m} ORDER BY 1 DESC LIMIT 3` })),
  },
  {
    name: 'DISTINCT',
    build: (r) => query(`SELECT count(*) FROM (${select(r, { select: `DISTINCT ${r.m}` })}) d`),
  },
  {
    name: 'DISTINCT ON',
    build: (r) =>
      query(
        select(r, {
          select: `DISTINCT ON (${r.m}) ${r.id}`,
          tail: `ORDER BY ${r.m}, ${r.id} LIMIT 5`,
        }),
      ),
  },
  { name: 'count(DISTINCT)', build: (r) => query(select(r, { select: `count(DISTINCT ${r.m})` })) },
  { name: 'min/max', build: (r) => query(select(r, { select: `min(${r.m}), max(${r.m})` })) },
  {
    name: 'string_agg',
    build: (r) => query(select(r, { select: `string_agg(${r.m}, ',' ORDER BY ${r.id})` })),
  },
  {
    name: 'HAVING',
    build: (r) => query(select(r, { select: 'count(*)', tail: `HAVING max(${r.m}) > ${r.mid}` })),
  },
  {
    name: 'lower()',
    build: (r) => query(select(r, { select: `${r.id}, lower(${r.m})`, tail: `ORDER BY ${r.id}` })),
  },
  {
    name: 'md5()',
    build: (r) => query(select(r, { select: `md5(${r.m})`, tail: `ORDER BY ${r.id}` })),
  },
  { name: 'length()', build: (r) => query(select(r, { select: `sum(length(${r.m}))` })) },
  {
    name: 'pg_column_size()',
    build: (r) => query(select(r, { select: `sum(pg_column_size(${r.m}))` })),
  },
  { name: 'a failing cast', build: (r) => query(select(r, { select: `${r.m}::int` })) },
  {
    name: 'a division',
    build: (r) => query(select(r, { select: `sum(1 / (ascii(right(${r.m}, 1)) - 53))` })),
  },
  {
    name: 'CASE',
    build: (r) =>
      query(select(r, { select: `sum(CASE WHEN ${r.m} < ${r.mid} THEN 1 ELSE 0 END)` })),
  },
  { name: 'NULLIF', build: (r) => query(select(r, { select: `count(NULLIF(${r.m}, ${r.mid}))` })) },
  {
    name: 'a window',
    build: (r) =>
      query(
        select(r, { select: `${r.id}, rank() OVER (ORDER BY ${r.m})`, tail: `ORDER BY ${r.id}` }),
      ),
  },
  {
    name: 'a window partition',
    build: (r) =>
      query(
        select(r, {
          select: `${r.id}, count(*) OVER (PARTITION BY left(${r.m}, 5))`,
          tail: `ORDER BY ${r.id}`,
        }),
      ),
  },
  {
    name: 'a JSON value',
    build: (r) =>
      query(select(r, { select: `jsonb_build_object('v', ${r.m})`, tail: `ORDER BY ${r.id}` })),
  },
  {
    name: 'a whole row',
    build: (r) => query(`SELECT to_jsonb(t) FROM (${select(r, { select: `${r.m} AS v` })}) t`),
  },
  {
    name: 'a subquery, filtered outside',
    build: (r) =>
      query(
        `SELECT count(*) FROM (${select(r, { select: `${r.m} AS v` })}) t WHERE t.v < ${r.mid}`,
      ),
  },
  {
    name: 'EXISTS',
    build: (r) =>
      query(select(r, { select: 'count(*)', where: `EXISTS (SELECT 1 WHERE ${r.m} < ${r.mid})` })),
  },
  {
    name: 'IN (subquery)',
    build: (r) =>
      query(`SELECT count(*) FROM products WHERE ${r.mid} < ANY (${select(r, { select: r.m })})`),
  },
  {
    name: 'a scalar subquery',
    build: (r) =>
      query(`SELECT (${select(r, { select: r.m, tail: `ORDER BY ${r.id} LIMIT 1` })}) AS v`),
  },
  {
    name: 'LIMIT (subquery)',
    build: (r) =>
      query(
        `SELECT 1 AS one FROM products LIMIT (${select(r, { select: 'count(*)', where: `${r.m} < ${r.mid}` })})`,
      ),
  },
  {
    name: 'JOIN ON',
    build: (r) =>
      query(select(r, { select: 'count(*)', join: `JOIN products jp ON jp.sku < ${r.m}` })),
  },
  {
    name: 'LATERAL use',
    build: (r) =>
      query(
        select(r, {
          select: 'count(*)',
          join: `CROSS JOIN LATERAL (SELECT ${r.m} AS v) lv`,
          where: `lv.v < ${r.mid}`,
        }),
      ),
  },
  {
    name: 'INTERSECT',
    build: (r) => query(`${select(r, { select: r.m })} INTERSECT SELECT ${r.mid}`),
  },
  {
    name: 'UNION',
    build: (r) => query(`SELECT count(*) FROM (${select(r, { select: r.m })} UNION SELECT 'x') u`),
  },
  {
    name: 'row position',
    build: (r) => query(select(r, { select: 'ctid', tail: `ORDER BY ${r.id}` })),
  },
  {
    name: 'EXPLAIN of a filter',
    build: (r) => ({
      tool: 'postgres_explain',
      sql: select(r, { select: r.id, where: `${r.m} < ${r.mid}` }),
    }),
  },
  {
    name: 'EXPLAIN of the column',
    build: (r) => ({ tool: 'postgres_explain', sql: select(r, { select: `${r.id}, ${r.m}` }) }),
  },
  {
    name: 'EXPLAIN in a query',
    build: (r) => query(`EXPLAIN ${select(r, { select: r.id, where: `${r.m} < ${r.mid}` })}`),
  },
];

/** Roads to hidden schemas and system catalogs, each a statement of its own. */
export const HIDDEN: readonly string[] = [
  'SELECT count(*) FROM hr.secrets',
  "SELECT pg_relation_size('hr.secrets')",
  "SELECT to_regclass('hr.secrets')",
  "SELECT pg_relation_size('secrets')",
  "SELECT has_table_privilege('hr.secrets', 'SELECT')",
  'SELECT pg_relation_size(c) FROM generate_series(16384, 17000) c',
  'SELECT sum(pg_relation_size(g::oid)) FROM generate_series(16384, 17000) g',
  'SELECT count(*) FROM pg_class',
  'SELECT sum(reltuples) FROM pg_class WHERE EXISTS (WITH pg_class AS (SELECT 1) SELECT 1)',
  "SELECT sum(relpages) FROM pg_class WHERE relname = 'secrets'",
  'SELECT count(*) FROM pg_stat_user_tables',
  "SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'secrets'",
  "SELECT histogram_bounds::text FROM pg_stats WHERE attname = 'national_id'",
  "SELECT most_common_vals::text FROM pg_stats WHERE EXISTS (WITH pg_stats AS (SELECT 1) SELECT 1) AND attname = 'ssn'",
  'SELECT count(*) FROM pg_stat_activity WHERE EXISTS (WITH pg_stat_activity AS (SELECT 1) SELECT 1)',
  'SELECT count(*) FROM pg_settings WHERE EXISTS (WITH pg_settings AS (SELECT 1) SELECT 1)',
  'SELECT count(*) FROM pg_roles WHERE EXISTS (WITH pg_roles AS (SELECT 1) SELECT 1)',
  'WITH x AS (SELECT 1) SELECT count(*) FROM (SELECT * FROM pg_catalog.pg_class) c',
  'SELECT count(*) FROM information_schema.tables',
  'SELECT pg_database_size(current_database())',
  "SELECT pg_size_pretty(pg_total_relation_size('employees'))",
  'SELECT pg_stat_get_live_tuples(16400)',
  'SELECT count(*) FROM pg_stat_get_activity(NULL)',
  "SELECT format_type(g, NULL) FROM generate_series(16384, 16600) g WHERE format_type(g, NULL) NOT LIKE '%?%'",
  "SELECT '16400'::regclass",
  "SELECT 'hr.secrets'::regclass::oid",
  "SELECT ('hr.' || 'secrets')::regclass",
  "SELECT pg_get_viewdef('salary_bands')",
  'EXPLAIN SELECT * FROM salary_bands',
  'EXPLAIN (FORMAT JSON) SELECT amount FROM salary_bands WHERE amount > 0',
  'SELECT count(*) FROM salary_bands',
  // A view computing from a masked column of a hidden table (its refusal names no hidden name).
  'SELECT domain FROM contact_domains ORDER BY id',
  'SELECT * FROM contact_domains',
  'EXPLAIN SELECT id FROM contact_domains',
  // Names PostgreSQL looks up at run time from a value: a type's input function (reg* types,
  // by name and spelled otherwise, arrays of them, a domain over one), the input-validation
  // functions (whose type argument is a name too), casts to a hidden table's row type, a text
  // search configuration, functions whose argument is an object's name.
  "SELECT pg_input_is_valid('hr.only_a', 'regclass')",
  "SELECT pg_input_is_valid('hr.only_a', 'pg_catalog.regclass')",
  "SELECT pg_input_is_valid('hr.only_a', ' RegClass ')",
  "SELECT pg_input_is_valid('{hr.only_a}', 'regclass[]')",
  "SELECT pg_input_is_valid('hr.only_a', 'relation_name')",
  "SELECT (pg_input_error_info('hr.only_a', 'regclass')).message",
  "SELECT * FROM pg_input_error_info('hr.mood_a', 'regtype')",
  "SELECT pg_input_is_valid('calm', 'hr.mood_a')",
  "SELECT (pg_input_error_info('calm', 'hr.mood_a')).sql_error_code",
  "SELECT 'hr.only_a'::relation_name",
  "SELECT CAST('hr.only_a' AS relation_name)",
  "SELECT '{hr.only_a}'::regclass[]",
  "SELECT 'hr.only_a'::pg_catalog.regclass IS NULL",
  'SELECT NULL::hr.only_a',
  'SELECT CAST(NULL AS hr.only_a)',
  "SELECT '(1)'::hr.only_a",
  'SELECT NULL::hr.mood_a',
  "SELECT * FROM jsonb_populate_record(NULL::hr.only_a, '{}')",
  'SELECT * FROM jsonb_to_record(\'{"x": null}\') AS r(x hr.mood_a)',
  "SELECT pg_basetype('hr.mood_a')",
  "SELECT to_tsvector('hr.words_a', 'calm')",
  "SELECT to_tsquery('hr.words_a', 'calm')",
  "SELECT pg_get_object_address('table', '{hr,only_a}', '{}')",
  "SELECT pg_get_acl('pg_class'::regclass, 'employees'::regclass, 0)",
  "SELECT to_regtype('hr.mood_a')",
  "SELECT to_regtypemod('hr.mood_a')",
  "SELECT format_type(to_regtype('hr.mood_a'), NULL)",
  "SELECT pg_describe_object('pg_class'::regclass, g::oid, 0) FROM generate_series(16384, 20000) g WHERE pg_describe_object('pg_class'::regclass, g::oid, 0) LIKE '%hr%'",
  "SELECT pg_has_role('pg_read_all_data', 'MEMBER')",
  "SELECT 'pg_monitor'::regrole",
];

/** Run-time lookups whose name comes in a parameter (`$1`: a value PostgreSQL looks up). */
export const LOOKUPS_WITH_PARAMS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['SELECT pg_input_is_valid($1, $2)', ['hr.only_a', 'regclass']],
  ['SELECT pg_input_is_valid($1, $2)', ['calm', 'hr.mood_a']],
  ['SELECT (pg_input_error_info($1, $2)).message', ['hr.only_a', 'regclass']],
  ["SELECT 'employees'::regclass = $1", ['hr.only_a']],
  ['SELECT $1::regclass', ['hr.only_a']],
  ['SELECT $1::text::regclass', ['hr.only_a']],
  ['SELECT $1::relation_name', ['hr.only_a']],
  ['SELECT pg_typeof(1) = $1', ['hr.mood_a']],
  ['SELECT coalesce(NULL::regtype, $1) IS NULL', ['hr.mood_a']],
  ['SELECT pg_relation_size($1)', ['hr.only_a']],
  ["SELECT to_tsvector($1, 'calm')", ['hr.words_a']],
  ['SELECT has_table_privilege($1, $2)', ['hr.only_a', 'SELECT']],
];

/** Other constructions around masked values and hidden objects, each a statement of its own. */
export const CONSTRUCTIONS: readonly string[] = [
  'SELECT national_id COLLATE "C" FROM employees ORDER BY id',
  'SELECT (national_id) FROM employees ORDER BY id',
  'SELECT e.national_id FROM employees AS customers(id), employees e WHERE customers.id = e.id ORDER BY e.id LIMIT 3',
  'SELECT g.national_id FROM (SELECT id, national_id FROM employees GROUP BY id) g ORDER BY g.id',
  "SELECT count(*) FROM (SELECT id, national_id FROM employees GROUP BY id) g WHERE g.national_id < 'NID-5'",
  'SELECT d.national_id FROM (SELECT DISTINCT ON (id) id, national_id FROM employees ORDER BY id) d ORDER BY d.id',
  'SELECT w.national_id, w.rn FROM (SELECT national_id, row_number() OVER (ORDER BY id) AS rn FROM employees) w ORDER BY rn',
  'SELECT x FROM employees e, LATERAL (SELECT e.national_id) AS l(x) ORDER BY e.id',
  "SELECT count(*) FROM employees e, LATERAL (SELECT e.national_id) AS l(x) WHERE x < 'NID-5'",
  "SELECT * FROM employees e JOIN LATERAL (SELECT e.national_id AS q) z ON z.q < 'NID-5'",
  "SELECT count(*) FROM employees e WHERE (e.id, e.national_id) > (1, 'NID-5')",
  "SELECT count(*) FROM employees WHERE national_id IS NOT DISTINCT FROM 'NID-5'",
  "SELECT string_agg(name, ',' ORDER BY national_id) FROM employees",
  'SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY national_id) FROM employees',
  "SELECT count(*) FILTER (WHERE national_id < 'NID-5') FROM employees",
  'SELECT id FROM employees ORDER BY id FETCH FIRST 3 ROWS WITH TIES',
  'SELECT national_id FROM employees ORDER BY national_id FETCH FIRST 1 ROW WITH TIES',
  'SELECT ARRAY(SELECT national_id FROM employees ORDER BY id)',
  "SELECT 1 WHERE 'NID-5' > ALL (SELECT national_id FROM employees)",
  'SELECT GROUPING(national_id) FROM employees GROUP BY ROLLUP (national_id)',
  'SELECT count(*) FROM employees GROUP BY CUBE (national_id, id)',
  'WITH c AS MATERIALIZED (SELECT national_id FROM employees) SELECT * FROM c, c AS d LIMIT 2',
  'WITH c AS (SELECT * FROM employees) SELECT c.to_json FROM c LIMIT 1',
  'WITH c AS (SELECT national_id FROM employees) SELECT c FROM c LIMIT 1',
  'SELECT * FROM staff a JOIN staff b USING (nid)',
  'SELECT * FROM staff NATURAL JOIN employees',
  "SELECT count(*) FROM staff s, jsonb_each('{}') j WHERE nid < 'NID-5'",
  'SELECT * FROM jsonb_to_record(\'{"a": 1}\') AS r(national_id text), employees LIMIT 1',
  'SELECT national_id FROM jsonb_to_record(\'{"a": 1}\') AS r(a int), employees ORDER BY id LIMIT 2',
  'SELECT * FROM employees, jsonb_each(\'{"k": 1}\') ORDER BY id LIMIT 2',
  'SELECT e.*::text FROM employees e LIMIT 1',
  'SELECT e::text FROM employees e LIMIT 1',
  'SELECT row(e.*) FROM employees e LIMIT 1',
  'SELECT json_agg(e) FROM employees e',
  'SELECT to_jsonb(s) FROM staff s LIMIT 1',
  'SELECT (SELECT s FROM staff s LIMIT 1)',
  'SELECT hashtext(national_id) FROM employees',
  'SELECT national_id FROM employees TABLESAMPLE bernoulli (50) REPEATABLE (1) ORDER BY id',
  'SELECT national_id FROM employees WHERE id = (SELECT max(id) FROM employees)',
  "SELECT national_id, id FROM employees UNION ALL SELECT 'x', 1 ORDER BY 2",
  'VALUES ((SELECT national_id FROM employees LIMIT 1))',
  'SELECT * FROM (VALUES (1)) v(national_id), employees WHERE v.national_id = 1 LIMIT 2',
  'SELECT national_id FROM employees, (VALUES (1)) v(national_id) LIMIT 2',
  'SELECT employees.national_id FROM employees, (VALUES (1)) v(national_id) ORDER BY employees.id LIMIT 2',
  'SELECT public.employees.national_id FROM employees ORDER BY id LIMIT 2',
  "SELECT count(*) FROM employees WHERE public.employees.national_id < 'NID-5'",
  "SELECT count(*) FROM employees WHERE employees.employees.national_id < 'NID-5'",
  'SELECT e2.x FROM employees e, LATERAL (SELECT national_id AS x) e2 ORDER BY e.id LIMIT 2',
  'SELECT count(*) FROM (SELECT * FROM employees) AS e(national_id) WHERE national_id > 3',
  "SELECT count(*) FROM (SELECT * FROM employees) AS e(a, b, c, d, f, g, h, national) WHERE national < 'NID-5'",
  'SELECT nid FROM staff_v2 s(nid) ORDER BY 1 LIMIT 1',
  "SELECT count(*) FROM (SELECT s.*, 1 FROM staff s) t(a, b, c, d, e) WHERE c < 'NID-5'",
  'WITH RECURSIVE r(n, v) AS (SELECT 1, national_id FROM employees WHERE id = 1 UNION ALL SELECT n + 1, v FROM r WHERE n < 2) SELECT n FROM r',
  'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SEARCH DEPTH FIRST BY n SET o SELECT * FROM r',
  'SELECT * FROM employees e1 JOIN employees e2 ON e1.national_id < e2.national_id LIMIT 1',
  "SELECT count(*) FROM employees WHERE national_id IN ('NID-5', 'NID-1000003')",
  "SELECT count(*) FROM employees WHERE national_id BETWEEN 'NID-1' AND 'NID-5'",
  'SELECT num_nulls(national_id) FROM employees',
  "SELECT e.national_id FROM employees e WHERE e.ctid = '(0,1)'",
  "SELECT id FROM employees WHERE ctid < '(0,10)' ORDER BY id",
  "SELECT count(*) FROM payroll WHERE tableoid = 'payroll_2024'::regclass",
  'SELECT tableoid::regclass, count(*) FROM payroll GROUP BY 1',
  'SELECT count(*) FROM ONLY payroll',
  'SELECT ssn FROM ONLY people',
  'SELECT badge FROM ONLY people ORDER BY id LIMIT 2',
  "SELECT count(*) FROM people WHERE badge LIKE 'B-1%'",
  'SELECT max(secret) FROM notes',
  'SELECT count(*) FROM tokens_other',
  'SELECT pg_column_size(s) FROM staff s LIMIT 1',
  'SELECT length(s::text) FROM staff s',
  'SELECT s.nid FROM staff s WHERE s IS NOT NULL ORDER BY s.id LIMIT 1',
  'SELECT count(*) FROM staff s WHERE s = s',
  "SELECT current_setting('search_path')",
  "SELECT national_id FROM employees LIMIT 1 OFFSET (SELECT count(*) FROM employees WHERE national_id < 'NID-5')",
  'SELECT * FROM employees ORDER BY 8 LIMIT 1',
  'SELECT * FROM employees e ORDER BY e LIMIT 1',
  'SELECT id FROM employees ORDER BY employees LIMIT 1',
  'SELECT DISTINCT e.* FROM employees e',
  'SELECT count(*) FROM (SELECT DISTINCT * FROM staff) d',
  'SELECT national_id AS id FROM employees ORDER BY id LIMIT 3',
  'SELECT national_id AS x, id FROM employees GROUP BY id, x LIMIT 2',
  'SELECT id AS national_id FROM employees GROUP BY national_id LIMIT 2',
  'SELECT id AS national_id FROM employees ORDER BY national_id LIMIT 3',
  'SELECT 1 AS national_id FROM employees ORDER BY national_id LIMIT 3',
  'EXPLAIN (FORMAT JSON) SELECT * FROM staff',
  'EXPLAIN SELECT * FROM payroll',
  'EXPLAIN SELECT id FROM employees',
  'SELECT pg_typeof(national_id) FROM employees LIMIT 1',
  'SELECT count(*) FROM salary_bands s JOIN hr.secrets x ON true',
  'SELECT count(*) FROM secrets',
  'SELECT * FROM "hr"."secrets"',
  'SELECT * FROM company.hr.secrets',
  'SELECT count(*) FROM pg_catalog.pg_namespace',
  "SELECT to_regnamespace('hr')",
  "SELECT 'secrets'::regclass",
  "SELECT obj_description('hr.secrets'::regclass)",
  "SELECT col_description('employees'::regclass, 8)",
  "SELECT has_column_privilege('employees', 'national_id', 'SELECT')",
];

/**
 * A road varied at random, reaching the same value: its FROM item nested in a subquery under its
 * own name (once or twice), a table joined beside it, a CTE of the same name shadowing nothing.
 */
export function varyRoad(road: Road, next: () => number): Road {
  let from = road.from;
  // `table`, `table alias` or `table alias(columns)`: the same names outside a subquery.
  const simple = /^("?\w+"?)(?: ("?\w+"?)(\([^)]*\))?)?$/.exec(from);
  if (simple !== null) {
    const name = simple[2] ?? simple[1]!;
    for (let depth = 0; depth < 1 + Math.floor(next() * 2); depth++) {
      if (next() < 0.5) from = `(SELECT * FROM ${from}) AS ${name}`;
    }
  }
  if (next() < 0.3) from = `${from} CROSS JOIN (SELECT 1 AS extra_one) AS extra`;
  const withs = [road.with, next() < 0.2 ? 'unrelated AS (SELECT 1 AS u)' : undefined].filter(
    (w) => w !== undefined,
  );
  return { ...road, from, ...(withs.length > 0 ? { with: withs.join(', ') } : {}) };
}

/**
 * A statement varied at random — nested as a subquery, under a CTE that shadows a table,
 * identifiers quoted, keywords in another case.
 */
export function vary(sql: string, next: () => number): string {
  let out = sql;
  const pick = (n: number) => Math.floor(next() * n);
  if (!/^\s*(?:EXPLAIN|WITH)\b/i.test(out) && next() < 0.4) {
    out = `SELECT * FROM (${out}) AS wrapped_${pick(100)}`;
  }
  if (!/^\s*(?:EXPLAIN|WITH)\b/i.test(out) && next() < 0.3) {
    out = `WITH ${['customers', 'employees', 'staff', 'pg_class', 'shadow'][pick(5)]} AS (SELECT 1 AS x) ${out}`;
  }
  if (next() < 0.3) out = out.replace(/\bnational_id\b/g, '"national_id"');
  if (next() < 0.3)
    out = out.replace(/\b(SELECT|FROM|WHERE|ORDER BY|GROUP BY)\b/g, (k) => k.toLowerCase());
  return out;
}
