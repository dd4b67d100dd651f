import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { companyDatabase, connectPostgres, text } from './helpers.ts';
import type { CompanyDatabase, PostgresHarness } from './helpers.ts';

// Layers 4 and 5 through a real client: output caps the model cannot raise, the schema
// allow-list, and column masking.

let company: CompanyDatabase;
const open: PostgresHarness[] = [];

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'results');
  await company.admin.query(`
    CREATE VIEW public.customer_contacts AS SELECT id, name, email FROM customers;
    GRANT SELECT ON public.customer_contacts TO ${company.role};
    GRANT USAGE ON SCHEMA hr TO ${company.role};
    GRANT SELECT ON hr.salaries TO ${company.role};
  `);
});
afterAll(async () => {
  for (const h of open) await h.close();
  await company?.close();
});

async function server(env: Record<string, string> = {}) {
  const h = await connectPostgres({ POSTGRES_URL: company.url, ...env });
  open.push(h);
  return h;
}

interface QueryResult {
  columns: Array<{ name: string; type: string; masked?: boolean }>;
  rows: unknown[][];
  row_count: number;
  truncated: boolean;
  truncated_by?: string;
  max_rows: number;
  max_bytes: number;
  values_cut: number;
}

async function query(h: PostgresHarness, sql: string, extra: Record<string, unknown> = {}) {
  const result = await h.client.callTool({ name: 'postgres_query', arguments: { sql, ...extra } });
  if (result.isError) throw new Error(text(result));
  return { structured: result.structuredContent as QueryResult, text: text(result) };
}

describe('output caps (layer 4)', () => {
  it('cuts at the row cap and says so', async () => {
    const h = await server();
    const { structured, text: body } = await query(h, 'SELECT g FROM generate_series(1, 10000) g');
    expect(structured).toMatchObject({
      row_count: 500,
      truncated: true,
      truncated_by: 'max_rows',
      max_rows: 500,
    });
    expect(structured.rows).toHaveLength(500);
    expect(body).toMatch(/TRUNCATED at the 500-row cap/);
  });

  it('does not call a result of exactly the cap truncated', async () => {
    const h = await server({ POSTGRES_MAX_ROWS: '50' });
    const { structured } = await query(h, 'SELECT g FROM generate_series(1, 50) g');
    expect(structured).toMatchObject({ row_count: 50, truncated: false });
    expect(structured.truncated_by).toBeUndefined();
  });

  it('lets the model lower the row cap but never raise it', async () => {
    const h = await server({ POSTGRES_MAX_ROWS: '100' });
    const lowered = await query(h, 'SELECT g FROM generate_series(1, 1000) g', { max_rows: 7 });
    expect(lowered.structured).toMatchObject({ row_count: 7, truncated: true, max_rows: 7 });
    const raised = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT 1', max_rows: 101 },
    });
    expect(raised.isError).toBe(true);
    expect(text(raised)).toMatch(/max_rows/);
    // A LIMIT in the SQL is the model's own business; the cap still applies above it.
    const limited = await query(h, 'SELECT g FROM generate_series(1, 1000) g LIMIT 5000');
    expect(limited.structured).toMatchObject({ row_count: 100, truncated: true });
  });

  it('cuts at the byte cap', async () => {
    const h = await server({ POSTGRES_MAX_BYTES: '4096' });
    const { structured } = await query(
      h,
      "SELECT g, repeat('x', 100) FROM generate_series(1, 1000) g",
    );
    expect(structured).toMatchObject({
      truncated: true,
      truncated_by: 'max_bytes',
      max_bytes: 4096,
    });
    expect(Buffer.byteLength(JSON.stringify(structured.rows))).toBeLessThanOrEqual(4096);
    expect(structured.row_count).toBeGreaterThan(10);
  });

  it('cuts single oversized values in place', async () => {
    const h = await server({ POSTGRES_MAX_BYTES: '16384' });
    const { structured } = await query(h, "SELECT 1 AS id, repeat('y', 100000) AS big");
    expect(structured.values_cut).toBe(1);
    expect(structured.rows[0]![1]).toMatch(/^y{1024}…\[98976 more characters cut\]$/);
  });

  it('streams: a result of 10 billion rows returns its first rows at once', async () => {
    const h = await server();
    const { structured } = await query(
      h,
      'SELECT a.i * b.i AS n FROM generate_series(1, 100000) a(i), generate_series(1, 100000) b(i)',
    );
    expect(structured).toMatchObject({ row_count: 500, truncated: true });
  });

  it('keeps types JSON cannot carry as PostgreSQL text', async () => {
    const h = await server();
    const { structured } = await query(
      h,
      `SELECT 9007199254740993::int8 AS big, 42::int8 AS small, 1.50::numeric(4,2) AS num,
              date '2025-02-03' AS d, timestamptz '2025-02-03 04:05:06+00' AS ts,
              '\\x0102'::bytea AS b, '{"a":1}'::jsonb AS j, ARRAY[1,2] AS arr, NULL::text AS n`,
    );
    expect(structured.rows[0]).toEqual([
      '9007199254740993',
      42,
      '1.50',
      '2025-02-03',
      expect.stringMatching(/^2025-02-03 0\d:05:06/),
      '\\x0102',
      { a: 1 },
      [1, 2],
      null,
    ]);
    expect(structured.columns.map((c) => c.type)).toEqual([
      'bigint',
      'bigint',
      'numeric',
      'date',
      'timestamp with time zone',
      'bytea',
      'jsonb',
      'integer[]',
      'text',
    ]);
  });

  it('passes parameters through the extended protocol', async () => {
    const h = await server();
    const { structured } = await query(
      h,
      'SELECT count(*)::int AS n FROM orders WHERE status = $1 AND total > $2',
      { params: ['shipped', 100] },
    );
    expect(structured.rows[0]![0]).toBeGreaterThan(0);
    const injected = await query(h, 'SELECT $1::text AS s', { params: ["'; DROP TABLE x; --"] });
    expect(injected.structured.rows[0]).toEqual(["'; DROP TABLE x; --"]);
  });
});

describe('row values in the text form', () => {
  it('sit in a code fence no value can close, so Markdown in them is never rendered', async () => {
    const h = await server();
    const result = await h.client.callTool({
      name: 'postgres_query',
      arguments: {
        sql: "SELECT '![x](https://evil.example/p.png?d=1)' AS img, 'a ```` b' AS ticks",
      },
    });
    const body = text(result);
    const fence = '`````';
    const inside = body.split(`${fence}\n`)[1]!.split(`\n${fence}`)[0]!;
    expect(inside).toContain('img (text) | ticks (text)');
    expect(inside).toContain('![x](https://evil.example/p.png?d=1) | a ```` b');
    // The structured rows keep the values exactly.
    expect((result.structuredContent as QueryResult).rows).toEqual([
      ['![x](https://evil.example/p.png?d=1)', 'a ```` b'],
    ]);
  });

  it('escape what could fake a row or a column: newlines, returns, bars, backslashes', async () => {
    const h = await server();
    const result = await h.client.callTool({
      name: 'postgres_query',
      arguments: {
        sql: String.raw`SELECT E'one\nfake | row\r\\n' AS v, 42 AS n, NULL AS z, '{"a":"|"}'::jsonb AS j UNION ALL SELECT 'plain', 7, 'x', '[]'`,
      },
    });
    const lines = text(result).split('\n');
    const header = lines.findIndex((l) => l.startsWith('v (text)'));
    expect(lines.slice(header + 1, header + 3)).toEqual([
      String.raw`one\nfake \| row\r\\n | 42 | NULL | {"a":"\|"}`,
      'plain | 7 | x | []',
    ]);
  });
});

describe('schema allow-list (layer 5)', () => {
  it('shows and queries only the allowed schemas', async () => {
    const h = await server();
    const listed = await h.client.callTool({ name: 'postgres_list_tables', arguments: {} });
    const names = (
      listed.structuredContent as { tables: Array<{ schema: string; name: string }> }
    ).tables.map((t) => `${t.schema}.${t.name}`);
    expect(names).toContain('public.customers');
    expect(names.some((n) => n.startsWith('hr.'))).toBe(false);
    // The role may read hr.salaries; the server still does not let it.
    for (const sql of [
      'SELECT * FROM hr.salaries',
      'SELECT * FROM customers WHERE id IN (SELECT employee_id FROM hr.salaries)',
    ]) {
      const refused = await h.client.callTool({ name: 'postgres_query', arguments: { sql } });
      expect(text(refused)).toMatch(/rule schema_not_allowed/);
    }
    // Unqualified, the name is not on the search_path at all.
    const unqualified = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT * FROM salaries' },
    });
    expect(text(unqualified)).toMatch(/relation "salaries" does not exist/);
    const described = await h.client.callTool({
      name: 'postgres_describe_table',
      arguments: { schema: 'hr', table: 'salaries' },
    });
    expect(text(described)).toMatch(/Schema "hr" is not available/);
  });

  it('exposes another schema once configured', async () => {
    const h = await server({ POSTGRES_SCHEMAS: 'public,hr' });
    const { structured } = await query(h, 'SELECT count(*)::int FROM hr.salaries');
    expect(structured.rows[0]).toEqual([40]);
  });

  it('narrows the schemas to GATEHOUSE_ALLOW_TARGETS', async () => {
    const h = await server({
      POSTGRES_SCHEMAS: 'public,hr',
      GATEHOUSE_ALLOW_TARGETS: `pg:${company.db.name}/public`,
    });
    expect(h.definition.db.schemas).toEqual(['public']);
    const refused = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT 1 FROM hr.salaries' },
    });
    expect(text(refused)).toMatch(/rule schema_not_allowed/);
  });
});

describe('column masking (layer 5)', () => {
  const masked = { POSTGRES_MASK_COLUMNS: '*.email,employees.national_id' };

  it('masks values by their origin: plain columns, stars, aliases and views', async () => {
    const h = await server(masked);
    const plain = await query(h, 'SELECT id, email, name FROM customers ORDER BY id LIMIT 2');
    expect(plain.structured.rows).toEqual([
      [1, '[masked]', expect.any(String)],
      [2, '[masked]', expect.any(String)],
    ]);
    expect(plain.structured.columns[1]).toEqual({ name: 'email', type: 'text', masked: true });
    const star = await query(h, 'SELECT * FROM employees ORDER BY id LIMIT 1');
    const row = Object.fromEntries(
      star.structured.columns.map((c, i) => [c.name, star.structured.rows[0]![i]]),
    );
    expect(row).toMatchObject({ email: '[masked]', national_id: '[masked]', title: 'CEO' });
    const alias = await query(h, 'SELECT e.national_id AS nid FROM employees e LIMIT 1');
    expect(alias.structured.rows[0]).toEqual(['[masked]']);
    const view = await query(h, 'SELECT * FROM customer_contacts LIMIT 1');
    expect(view.structured.rows[0]![2]).toBe('[masked]');
    // Through a subquery or a CTE the value passes unchanged: it is resolved, and masked.
    const sub = await query(h, 'SELECT * FROM (SELECT * FROM customers) s ORDER BY id LIMIT 1');
    expect(sub.structured.rows[0]![2]).toBe('[masked]');
    const cte = await query(
      h,
      'WITH x AS (SELECT id, email AS contact FROM customers) SELECT contact FROM x LIMIT 1',
    );
    expect(cte.structured.rows[0]).toEqual(['[masked]']);
    // No masked value leaks into the text form either.
    const clear = await company.admin.query<{ email: string }>(
      'SELECT email FROM customers WHERE id = 1',
    );
    expect(plain.text).not.toContain(clear.rows[0]!.email);
  });

  it('refuses queries that would compute on a masked column', async () => {
    const h = await server(masked);
    for (const sql of [
      "SELECT id FROM customers WHERE email = 'ada.lovelace1@example.com'",
      'SELECT lower(email) FROM customers',
      'SELECT row_to_json(c) FROM customers c',
      'SELECT national_id FROM employees ORDER BY national_id',
      'SELECT * FROM (SELECT * FROM customers) s ORDER BY email',
    ]) {
      const result = await h.client.callTool({ name: 'postgres_query', arguments: { sql } });
      expect(text(result), sql).toMatch(/rule masked_column/);
    }
  });

  it('leaves other columns and tables alone', async () => {
    const h = await server(masked);
    const { structured } = await query(
      h,
      'SELECT lower(name) FROM customers WHERE country = $1 ORDER BY 1 LIMIT 1',
      {
        params: ['DE'],
      },
    );
    expect(structured.rows[0]![0]).not.toBe('[masked]');
  });

  it('marks masked columns in describe_table and hides their defaults', async () => {
    const h = await server(masked);
    const described = await h.client.callTool({
      name: 'postgres_describe_table',
      arguments: { table: 'employees' },
    });
    const columns = (
      described.structuredContent as { columns: Array<{ name: string; masked?: boolean }> }
    ).columns;
    expect(columns.filter((c) => c.masked).map((c) => c.name)).toEqual(['email', 'national_id']);
    expect(text(described)).toMatch(/national_id text \[not null, MASKED\]/);
  });

  it('refuses to EXPLAIN a filter on a masked column: its row estimates would give the values away', async () => {
    const h = await server(masked);
    const result = await h.client.callTool({
      name: 'postgres_explain',
      arguments: { sql: "SELECT id FROM customers WHERE email = 'x'" },
    });
    expect(text(result)).toMatch(/rule masked_column/);
    // A plan that only reads a masked column comes without the planner's estimates.
    const plain = await h.client.callTool({
      name: 'postgres_explain',
      arguments: { sql: 'SELECT email FROM customers' },
    });
    expect(plain.isError).toBeFalsy();
    expect(text(plain)).toMatch(/Seq Scan on customers/);
    expect(text(plain)).not.toMatch(/rows=|cost=|width=/);
  });
});
