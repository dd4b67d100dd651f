import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  FIXTURE_MASKS,
  addMaskingFixture,
  companyDatabase,
  connectPostgres,
  text,
} from './helpers.ts';
import type { CompanyDatabase, PostgresHarness } from './helpers.ts';
import { looksNamesUp } from '../src/sql/guard.ts';

// The outside review's findings as named cases, through a real MCP client, a real PostgreSQL and
// the answers' default (text) view: every road that renames or shadows a masked column, a
// hidden schema or a system catalog. Every answer of this file is also checked against every
// secret value of the database: none may appear in any of them.

let company: CompanyDatabase;
let h: PostgresHarness;
let secrets: string[] = [];
const answers: string[] = [];

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'masking');
  await addMaskingFixture(company);
  await company.admin.query(
    `INSERT INTO hr.secrets SELECT i, 'HIDDEN-' || i FROM generate_series(1, 10) i`,
  );
  h = await connectPostgres({
    POSTGRES_URL: company.url,
    POSTGRES_MASK_COLUMNS: FIXTURE_MASKS,
    GATEHOUSE_STRUCTURED_OUTPUT: 'false',
  });
  const found = await company.admin.query<{ v: string }>(`
    SELECT national_id AS v FROM employees UNION ALL SELECT email FROM employees
    UNION ALL SELECT email FROM customers UNION ALL SELECT ssn FROM payroll
    UNION ALL SELECT badge FROM people UNION ALL SELECT token FROM tokens
    UNION ALL SELECT secret FROM notes UNION ALL SELECT secret FROM hr.secrets
    UNION ALL SELECT nid_upper FROM identities UNION ALL SELECT nid_lower FROM identities`);
  secrets = found.rows.map((r) => r.v);
});

afterAll(async () => {
  await h?.close();
  await company?.close();
});

/** Calls a tool; returns its text, the default view (recorded for the secrets check). */
async function call(name: string, args: Record<string, unknown>) {
  const result = await h.client.callTool({ name, arguments: args });
  const body = text(result);
  answers.push(body);
  return { isError: result.isError === true, text: body };
}

const query = (sql: string) => call('postgres_query', { sql });

// [finding, statement, the rule that refuses it]
const REFUSED: Array<[string, string, string]> = [
  // Alias column lists rename the masked column positionally.
  [
    'alias list, computed',
    'SELECT lower(nid) FROM employees e(i, n, t, d, m, h, em, nid)',
    'masked_column',
  ],
  [
    'alias list, WHERE',
    "SELECT i FROM employees e(i, n, t, d, m, h, em, nid) WHERE nid < 'NID-5'",
    'masked_column',
  ],
  [
    'alias list, ORDER BY',
    'SELECT i FROM employees e(i, n, t, d, m, h, em, nid) ORDER BY nid LIMIT 1',
    'masked_column',
  ],
  [
    'alias list, JOIN USING',
    'SELECT count(*) FROM employees a(i, n, t, d, m, h, em, nid) JOIN employees b(i, n, t, d, m, h, em, nid) USING (nid)',
    'masked_column',
  ],
  [
    'alias list, a failing cast',
    'SELECT nid::int FROM employees e(i, n, t, d, m, h, em, nid)',
    'masked_column',
  ],
  [
    'a joined alias list',
    "SELECT count(*) FROM (employees CROSS JOIN products) AS j(a, b, c, d, e, f, g, z) WHERE z < 'NID-5'",
    'masked_column',
  ],
  // CTE names that shadow a real relation elsewhere in the statement.
  [
    'a CTE named employees inside an EXISTS',
    "SELECT id FROM employees WHERE national_id < 'NID-5' AND EXISTS (WITH employees AS (SELECT 1) SELECT 1)",
    'masked_column',
  ],
  [
    'pg_class shadowed',
    'SELECT relname FROM pg_class WHERE EXISTS (WITH pg_class AS (SELECT 1) SELECT 1)',
    'system_catalog',
  ],
  [
    'pg_settings shadowed',
    'SELECT name, setting FROM pg_settings WHERE EXISTS (WITH pg_settings AS (SELECT 1) SELECT 1)',
    'system_catalog',
  ],
  [
    'pg_stat_activity shadowed',
    'SELECT query FROM pg_stat_activity WHERE EXISTS (WITH pg_stat_activity AS (SELECT 1) SELECT 1)',
    'system_catalog',
  ],
  [
    'pg_roles shadowed',
    'SELECT rolname FROM pg_roles WHERE EXISTS (WITH pg_roles AS (SELECT 1) SELECT 1)',
    'system_catalog',
  ],
  [
    'pg_stats shadowed, the masked column histogram',
    "SELECT histogram_bounds::text FROM pg_stats WHERE attname = 'national_id' AND EXISTS (WITH pg_stats AS (SELECT 1) SELECT 1)",
    'system_catalog',
  ],
  // Functional notation: e.to_json is to_json(e), the whole row.
  ['functional notation', 'SELECT e.to_json FROM employees e LIMIT 1', 'masked_column'],
  // Partitions and inheritance children carry their table's mask.
  ['a partition, WHERE', "SELECT id FROM payroll_2024 WHERE ssn < 'SSN-5'", 'masked_column'],
  [
    'an inheritance child, ORDER BY',
    'SELECT id FROM visitors ORDER BY badge LIMIT 1',
    'masked_column',
  ],
  ['partitioned by a masked key', 'SELECT id FROM tokens', 'masked_column'],
  ['a partition chosen by a masked key', 'SELECT count(*) FROM tokens_a', 'masked_column'],
  // Views: renamed, re-viewed, computed, filtering.
  [
    "a view's renamed masked column, filtered",
    "SELECT id FROM staff WHERE nid LIKE 'NID-1%'",
    'masked_column',
  ],
  ['a view of a view, aggregated', 'SELECT count(DISTINCT tax_ref) FROM staff_v2', 'masked_column'],
  ['a view computing from a masked column', 'SELECT nid_lower FROM staff_lower', 'masked_column'],
  ['a view filtering on a masked column', 'SELECT id FROM staff_filtered', 'masked_column'],
  // A row-security policy choosing rows by a masked column.
  ['a policy on a masked column', 'SELECT id FROM notes', 'masked_column'],
  // Catalog lookups by oid.
  ['an oid cast', 'SELECT 16384::regclass', 'name_lookup'],
  [
    'oids counted through',
    'SELECT format_type(g, NULL) FROM generate_series(16384, 17000) g',
    'name_lookup',
  ],
  ['a size by oid', 'SELECT pg_relation_size(16400)', 'name_lookup'],
  // EXPLAIN through postgres_query: its output is not rewritten.
  [
    'EXPLAIN of a masked filter',
    "EXPLAIN SELECT id FROM employees WHERE national_id < 'NID-5'",
    'masked_column',
  ],
  ['EXPLAIN of a masked column', 'EXPLAIN SELECT national_id FROM employees', 'masked_column'],
  ['EXPLAIN into a hidden schema', 'EXPLAIN SELECT * FROM salary_bands', 'schema_not_allowed'],
];

describe('the review findings are refused, each by its rule', () => {
  it.each(REFUSED)('%s', async (_finding, sql, rule) => {
    const result = await query(sql);
    expect(result.isError, result.text).toBe(true);
    expect(result.text).toMatch(new RegExp(`rule ${rule}`));
  });

  it('audits each refusal as denied, with its rule', () => {
    const denied = h.records.filter((r) => r.event.reason === 'denied');
    expect(denied.length).toBeGreaterThanOrEqual(REFUSED.length);
    expect(new Set(denied.map((r) => r.policy?.rule))).toEqual(
      new Set(REFUSED.map(([, , rule]) => `sql:${rule}`)),
    );
  });
});

describe('masked values passed through come back masked, under any name', () => {
  it.each([
    [
      'an alias column list',
      'SELECT i, nid FROM employees e(i, n, t, d, m, h, em, nid) ORDER BY i LIMIT 2',
    ],
    [
      'a subquery',
      'SELECT s.x FROM (SELECT id, national_id AS x FROM employees) s ORDER BY s.id LIMIT 2',
    ],
    [
      'a CTE named like a table',
      'WITH orders AS (SELECT id, national_id AS status FROM employees) SELECT status FROM orders ORDER BY id LIMIT 2',
    ],
    ["a view's renamed column", 'SELECT nid FROM staff ORDER BY id LIMIT 2'],
    ['a view of a view', 'SELECT tax_ref FROM staff_v2 ORDER BY name LIMIT 2'],
    ['a materialized view', 'SELECT national_id FROM staff_mv ORDER BY id LIMIT 2'],
    ['a partition', 'SELECT ssn FROM payroll_2024 ORDER BY id LIMIT 2'],
    ['an inheritance child', 'SELECT badge FROM visitors ORDER BY id LIMIT 2'],
    ['the row position', 'SELECT ctid FROM employees ORDER BY id LIMIT 2'],
    ['a stored generated column', 'SELECT nid_upper FROM identities ORDER BY id LIMIT 2'],
    [
      'a stored generated column, renamed',
      'SELECT u FROM identities AS g(k, n, u) ORDER BY k LIMIT 2',
    ],
    [
      'a sample',
      'SELECT national_id FROM employees TABLESAMPLE bernoulli (100) ORDER BY id LIMIT 2',
    ],
  ])('%s', async (_road, sql) => {
    const result = await query(sql);
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toMatch(/\(\w+, masked\)/);
    expect(result.text.match(/\[masked\]/g)).toHaveLength(2);
  });

  it('shows a view the DBA made into a hidden schema, as the DBA meant', async () => {
    const result = await query('SELECT count(*) AS n FROM salary_bands');
    expect(result.text).toMatch(/n \(bigint\)\n40\n/);
  });
});

describe('values the table derives from a masked column (generated columns)', () => {
  it('refuses a virtual one, which is computed when read, and says which column it derives from', async () => {
    for (const sql of [
      'SELECT nid_lower FROM identities',
      'SELECT nid_length FROM identities',
      'SELECT * FROM identities',
      'SELECT count(*) FROM identities WHERE nid_length > 3',
    ]) {
      const result = await query(sql);
      expect(result.isError, `${sql}: ${result.text}`).toBe(true);
      expect(result.text).toMatch(
        /rule masked_column.*computed by the generated column public\.identities\.nid_\w+ from the masked column public\.identities\.national_id/,
      );
    }
  });

  it('refuses any use of a stored one but passing it through', async () => {
    const result = await query("SELECT count(*) FROM identities WHERE nid_upper < 'NID-5'");
    expect(result.text).toMatch(/rule masked_column.*nid_upper is masked/);
  });
});

describe('a shadowed view that runs owner code', () => {
  it('runs, and the session lock it takes does not stay on a pooled connection', async () => {
    const result = await query(
      'SELECT sum(id) AS n FROM lock_view WHERE EXISTS (WITH lock_view AS (SELECT 1) SELECT 1)',
    );
    expect(result.isError, result.text).toBe(false);
    await expect.poll(() => company.advisoryLocks()).toBe(0);
    expect(h.logs()).toContain('advisory locks');
    const next = await query('SELECT 1 AS one');
    expect(next.text).toMatch(/one \(integer\)\n1/);
  });
});

describe('EXPLAIN', () => {
  it('refuses a plan whose estimates depend on a masked value, and says why', async () => {
    const result = await call('postgres_explain', {
      sql: "SELECT id FROM employees WHERE national_id < 'NID-5'",
    });
    expect(result.text).toMatch(/rule masked_column.*national_id/);
  });

  it('shows the plan of a masked column without estimates, and says so', async () => {
    const result = await call('postgres_explain', { sql: 'SELECT nid FROM staff' });
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toMatch(/estimates are left out/);
    expect(result.text).toMatch(/Seq Scan on employees/);
    expect(result.text).not.toMatch(/rows=|cost=|width=/);
    // Other plans keep them.
    const plain = await call('postgres_explain', { sql: 'SELECT name FROM products' });
    expect(plain.text).toMatch(/cost=.*rows=\d+ width=\d+/);
  });

  it('refuses a plan that would show a hidden schema a view reads', async () => {
    const result = await call('postgres_explain', { sql: 'SELECT * FROM salary_bands' });
    // It says what the caller wrote (the view), never what the view hides.
    expect(result.text).toMatch(
      /rule schema_not_allowed.*a relation outside the allowed schemas, read through the view public\.salary_bands/,
    );
    expect(result.text).not.toMatch(/\bhr\b|salaries/);
  });

  it('does the same in the explain prompt', async () => {
    const prompt = await h.client.getPrompt({
      name: 'postgres_explain_slow_query',
      arguments: { sql: "SELECT id FROM employees WHERE national_id < 'NID-5'" },
    });
    const body = JSON.stringify(prompt.messages);
    answers.push(body);
    expect(body).toMatch(/no plan: Refused by the read-only SQL policy \(rule masked_column\)/);
  });
});

describe('the schema tools mark what queries mask', () => {
  it.each([
    ['payroll_2024', 'ssn'],
    ['visitors', 'badge'],
    ['staff', 'nid'],
    ['staff_v2', 'tax_ref'],
    ['staff_lower', 'nid_lower'],
    ['staff_mv', 'national_id'],
    ['identities', 'nid_upper'],
    ['identities', 'nid_lower'],
    ['identities', 'nid_length'],
  ])('%s.%s', async (table, column) => {
    const result = await call('postgres_describe_table', { table });
    expect(result.text).toMatch(new RegExp(`\\n  ${column} [^\\n]*MASKED`));
  });

  it('in the table-schema resource too', async () => {
    const read = await h.client.readResource({
      uri: `postgres://${company.db.name}/public/staff/schema`,
    });
    const described = JSON.parse((read.contents[0] as { text: string }).text) as {
      columns: Array<{ name: string; masked?: boolean }>;
    };
    expect(described.columns.filter((c) => c.masked === true).map((c) => c.name)).toEqual(['nid']);
  });
});

describe('every answer of this file', () => {
  it('carries none of the masked or hidden values', () => {
    expect(secrets.length).toBeGreaterThan(300);
    expect(answers.length).toBeGreaterThan(REFUSED.length);
    for (const answer of answers) {
      for (const secret of secrets) {
        expect(answer.includes(secret), `${secret} in: ${answer.slice(0, 300)}`).toBe(false);
      }
    }
  });
});

describe('a catalog answer older than the database', () => {
  it('is looked up afresh when a reference beside a masked column denotes nothing it knows', async () => {
    const fresh = await companyDatabase(inject('pgAdminUrl'), 'masking_stale');
    const server = await connectPostgres({
      POSTGRES_URL: fresh.url,
      POSTGRES_MASK_COLUMNS: 'employees.national_id,employees.badge',
      GATEHOUSE_STRUCTURED_OUTPUT: 'false',
    });
    try {
      // The catalog answers about employees are cached (for a minute by default)…
      const before = await server.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT id FROM employees WHERE id = 1' },
      });
      expect(before.isError).toBeFalsy();
      // …when the DBA adds a column the configuration masks.
      await fresh.admin.query(`ALTER TABLE employees ADD COLUMN badge text DEFAULT 'B-42'`);
      const filtered = await server.client.callTool({
        name: 'postgres_query',
        arguments: { sql: "SELECT id FROM employees WHERE badge = 'B-42'" },
      });
      expect(text(filtered)).toMatch(/rule masked_column.*badge/);
      const projected = await server.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT badge FROM employees ORDER BY id LIMIT 1' },
      });
      expect(text(projected)).toMatch(/badge \(text, masked\)\n\[masked\]/);
      // A name that denotes nothing, looked up afresh, is PostgreSQL's to refuse.
      const typo = await server.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT badg FROM employees' },
      });
      expect(text(typo)).toMatch(/PostgreSQL error 42703: column "badg" does not exist/);
    } finally {
      await server.close();
      await fresh.close();
    }
  });
});

describe("PostgreSQL's own catalog", () => {
  it('has no built-in function taking a catalog name (a reg* argument) that the rules do not know', async () => {
    // A text given where a reg* type is expected is looked up by name; every such function must
    // be one whose arguments the rules check (or one they deny outright).
    const found = await company.admin.query<{ name: string }>(`
      SELECT DISTINCT p.proname AS name FROM pg_proc p
      WHERE p.pronamespace = 'pg_catalog'::regnamespace
        AND EXISTS (SELECT 1 FROM unnest(p.proargtypes) t
                    WHERE t::regtype::text IN ('regclass', 'regtype', 'regproc', 'regprocedure',
                      'regoper', 'regoperator', 'regnamespace', 'regrole', 'regconfig',
                      'regdictionary', 'regcollation'))
        AND p.proname !~ '^reg\\w+(?:out|send|in|recv)$'`);
    expect(found.rows.length).toBeGreaterThan(30);
    const unknown: string[] = [];
    for (const { name } of found.rows) {
      if (looksNamesUp(name)) continue;
      const result = await query(`SELECT ${name}()`);
      // Denied by name (or volatile) before any argument counts.
      if (!/rule function_(?:denied|volatile)/.test(result.text)) unknown.push(name);
    }
    expect(unknown).toEqual([]);
  });
});

describe('column privileges, the layer the database enforces', () => {
  it('are reported at start, and refuse every use of a revoked column, SELECT * included', async () => {
    const fresh = await companyDatabase(inject('pgAdminUrl'), 'masking_grants');
    const server = await connectPostgres({
      POSTGRES_URL: fresh.url,
      POSTGRES_MASK_COLUMNS: 'employees.national_id,employees.email',
      GATEHOUSE_STRUCTURED_OUTPUT: 'false',
    });
    try {
      const before = await server.definition.db.maskingReport();
      expect(before).toEqual({
        columns: 2,
        readable: ['public.employees.email', 'public.employees.national_id'].sort(),
        unmatched: [],
      });
      // What the README's "Masking and column privileges" has the DBA run.
      await fresh.admin.query(`
        REVOKE SELECT ON employees FROM ${fresh.role};
        GRANT SELECT (id, name, title, department, manager_id, hired_on) ON employees TO ${fresh.role}`);
      expect(await server.definition.db.maskingReport()).toEqual({
        columns: 2,
        readable: [],
        unmatched: [],
      });
      const listed = await server.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT id, name FROM employees ORDER BY id LIMIT 1' },
      });
      expect(text(listed)).toMatch(/id \(integer\) \| name \(text\)\n1 \| Employee 1/);
      // PostgreSQL now refuses the column itself, even plainly projected or under a star.
      for (const sql of ['SELECT national_id FROM employees', 'SELECT * FROM employees']) {
        const refused = await server.client.callTool({
          name: 'postgres_query',
          arguments: { sql },
        });
        expect(text(refused), sql).toMatch(
          /PostgreSQL denied access: permission denied for table employees/,
        );
      }
    } finally {
      await server.close();
      await fresh.close();
    }
  });
});

describe('a mask pattern that matches nothing', () => {
  it('is reported (a typo would leave the column in the clear)', async () => {
    const server = await connectPostgres({
      POSTGRES_URL: company.url,
      POSTGRES_MASK_COLUMNS: 'employees.nationalid,*.email,Employees.national_id',
    });
    try {
      const report = await server.definition.db.maskingReport();
      expect(report.unmatched).toEqual(['employees.nationalid', 'Employees.national_id']);
    } finally {
      await server.close();
    }
  });
});
