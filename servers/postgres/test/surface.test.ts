import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { companyDatabase, connectPostgres, text } from './helpers.ts';
import type { CompanyDatabase, PostgresHarness } from './helpers.ts';

// The tools, resources and prompts through a real MCP client, in both protocol eras.

let company: CompanyDatabase;
let h: PostgresHarness;
let modern: PostgresHarness;
let base: string;

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'surface');
  const env = { POSTGRES_URL: company.url, POSTGRES_MASK_COLUMNS: '*.email' };
  h = await connectPostgres(env);
  modern = await connectPostgres(env, { era: 'modern' });
  base = `postgres://${company.db.name}`;
});
afterAll(async () => {
  await h?.close();
  await modern?.close();
  await company?.close();
});

describe('tools', () => {
  it('lists four read-only tools with every annotation and an output schema', async () => {
    for (const client of [h.client, modern.client]) {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'postgres_describe_table',
        'postgres_explain',
        'postgres_list_tables',
        'postgres_query',
      ]);
      for (const tool of tools) {
        expect(tool.annotations).toMatchObject({
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        });
        expect(tool.outputSchema).toBeDefined();
        expect(tool.title).toBeTruthy();
      }
    }
  });

  it('answers a query with columns, rows, counts and a compact text form, in both eras', async () => {
    for (const client of [h.client, modern.client]) {
      const result = await client.callTool({
        name: 'postgres_query',
        arguments: {
          sql: 'SELECT status, count(*)::int AS n FROM orders GROUP BY status ORDER BY status',
        },
      });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({
        columns: [
          { name: 'status', type: 'text' },
          { name: 'n', type: 'integer' },
        ],
        row_count: 4,
        truncated: false,
        rows: [
          ['cancelled', expect.any(Number)],
          ['paid', expect.any(Number)],
          ['pending', expect.any(Number)],
          ['shipped', expect.any(Number)],
        ],
      });
      expect(text(result)).toMatch(
        /^4 rows in [\d.]+ ms\n<untrusted-data-\w+ source="postgres rows/,
      );
      expect(text(result)).toContain('status (text) | n (integer)\ncancelled | ');
    }
  });

  it('reports SQL errors from PostgreSQL with the position and keeps serving', async () => {
    const result = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT nme FROM customers' },
    });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /PostgreSQL error 42703: column "nme" does not exist \(at character 8\)\. Hint: Perhaps you meant/,
    );
    const refused = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'DROP TABLE customers' },
    });
    expect(text(refused)).toMatch(/rule statement_type.*a DROP/);
  });

  it('says which params are missing', async () => {
    const result = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT * FROM orders WHERE id = $1 AND status = $2', params: [1] },
    });
    expect(text(result)).toMatch(/params do not match: .*Pass one value in params for each \$n/);
  });

  it('refuses arguments outside the schema with a specific message', async () => {
    const result = await h.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT 1', params: [{ nested: true }] },
    });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/params/);
  });

  it('lists tables with kinds, estimates and comments, filtered by pattern', async () => {
    const result = await h.client.callTool({
      name: 'postgres_list_tables',
      arguments: { name_pattern: 'order%' },
    });
    expect(result.structuredContent).toEqual({
      tables: [
        expect.objectContaining({
          schema: 'public',
          name: 'order_items',
          kind: 'table',
          readable: true,
        }),
        expect.objectContaining({
          name: 'orders',
          row_estimate: 2000,
          comment: 'One row per order; total is the sum of its items',
        }),
      ],
      truncated: false,
    });
    const wrong = await h.client.callTool({
      name: 'postgres_list_tables',
      arguments: { schema: 'hr' },
    });
    expect(text(wrong)).toMatch(/Schema "hr" is not available; the allowed schemas are public/);
  });

  it('describes a table: columns, keys, foreign keys both ways, indexes', async () => {
    const result = await h.client.callTool({
      name: 'postgres_describe_table',
      arguments: { table: 'orders' },
    });
    expect(result.structuredContent).toMatchObject({
      schema: 'public',
      name: 'orders',
      kind: 'table',
      primary_key: ['id'],
      columns: expect.arrayContaining([
        { name: 'total', type: 'numeric(12,2)', nullable: false, default: '0', comment: null },
      ]),
      foreign_keys: [
        {
          columns: ['customer_id'],
          references: { schema: 'public', table: 'customers', columns: ['id'] },
        },
      ].map((fk) => expect.objectContaining(fk)),
      referenced_by: [{ schema: 'public', table: 'order_items', columns: ['order_id'] }],
      indexes: expect.arrayContaining([
        expect.objectContaining({ name: 'orders_customer_id_idx', unique: false, primary: false }),
      ]),
    });
    expect(text(result)).toContain('fk (customer_id) → public.customers(id)');
    const missing = await h.client.callTool({
      name: 'postgres_describe_table',
      arguments: { table: 'nope' },
    });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toMatch(/No table or view "nope" in public\. Use postgres_list_tables/);
  });

  it('explains a query as JSON and text, and refuses ANALYZE unless configured', async () => {
    const result = await h.client.callTool({
      name: 'postgres_explain',
      arguments: { sql: 'SELECT * FROM orders WHERE customer_id = $1', params: [3] },
    });
    const plan = result.structuredContent as {
      plan: Array<{ Plan: { 'Node Type': string } }>;
      text: string;
      analyzed: boolean;
    };
    expect(plan.analyzed).toBe(false);
    expect(plan.plan[0]!.Plan['Node Type']).toMatch(/Scan/);
    expect(plan.text).toMatch(/on orders\s+\(cost=/);
    const generic = await h.client.callTool({
      name: 'postgres_explain',
      arguments: { sql: 'SELECT * FROM orders WHERE customer_id = $1' },
    });
    expect(text(generic)).toMatch(/customer_id = \$1/);
    const analyze = await h.client.callTool({
      name: 'postgres_explain',
      arguments: { sql: 'SELECT 1', analyze: true },
    });
    expect(text(analyze)).toMatch(/rule explain_analyze.*POSTGRES_ALLOW_EXPLAIN_ANALYZE/);
    const wrapped = await h.client.callTool({
      name: 'postgres_explain',
      arguments: { sql: 'EXPLAIN SELECT 1' },
    });
    expect(text(wrapped)).toMatch(/without EXPLAIN/);
  });

  it('runs EXPLAIN ANALYZE read-only when the operator allows it', async () => {
    const analyzing = await connectPostgres({
      POSTGRES_URL: company.url,
      POSTGRES_ALLOW_EXPLAIN_ANALYZE: 'true',
    });
    try {
      const before = await company.checksum();
      const result = await analyzing.client.callTool({
        name: 'postgres_explain',
        arguments: { sql: 'SELECT count(*) FROM order_items', analyze: true },
      });
      expect(result.structuredContent).toMatchObject({ analyzed: true });
      expect(text(result)).toMatch(/actual time=.*\n[\s\S]*Execution Time: [\d.]+ ms/);
      expect(await company.checksum()).toBe(before);
    } finally {
      await analyzing.close();
    }
  });

  it('keeps the SQL in the audit record only when POSTGRES_AUDIT_SQL is on', async () => {
    const sql = "SELECT count(*) FROM customers WHERE country = 'SE'";
    const audited = await connectPostgres({
      POSTGRES_URL: company.url,
      POSTGRES_AUDIT_SQL: 'true',
    });
    try {
      await audited.client.callTool({ name: 'postgres_query', arguments: { sql } });
      const record = audited.records.find((r) => r.event.action === 'tools/call');
      expect(record).toMatchObject({ args: { redacted: { sql } } });
    } finally {
      await audited.close();
    }
    await h.client.callTool({ name: 'postgres_query', arguments: { sql } });
    expect(JSON.stringify(h.records)).not.toContain("country = 'SE'");
  });

  it('records each call in the audit trail with the schema targets', () => {
    const calls = h.records.filter((r) => r.event.action === 'tools/call');
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0]).toMatchObject({
      tool: { name: expect.stringMatching(/^postgres_/), read_only: true },
      target: { resource: `pg:${company.db.name}/public` },
    });
  });
});

describe('resources', () => {
  it('lists the schemas resource and one schema resource per table', async () => {
    for (const client of [h.client, modern.client]) {
      const { resources } = await client.listResources();
      const uris = resources.map((r) => r.uri);
      expect(uris).toContain(`${base}/schemas`);
      expect(uris).toContain(`${base}/public/orders/schema`);
      expect(uris.some((u) => u.includes('/hr/'))).toBe(false);
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
        'postgres://{database}/{schema}/{table}/schema',
      ]);
    }
  });

  it('reads the schemas and a table schema', async () => {
    const schemas = await h.client.readResource({ uri: `${base}/schemas` });
    const body = JSON.parse((schemas.contents[0] as { text: string }).text);
    expect(body.database).toBe(company.db.name);
    expect(body.schemas[0].tables.map((t: { name: string }) => t.name)).toEqual(
      expect.arrayContaining(['customers', 'orders', 'products', 'employees']),
    );
    const table = await modern.client.readResource({ uri: `${base}/public/customers/schema` });
    const described = JSON.parse((table.contents[0] as { text: string }).text);
    expect(described.columns.find((c: { name: string }) => c.name === 'email')).toMatchObject({
      masked: true,
    });
  });

  it('answers not found for other tables, schemas and databases', async () => {
    for (const uri of [
      `${base}/public/nope/schema`,
      `${base}/hr/salaries/schema`,
      'postgres://otherdb/public/orders/schema',
    ]) {
      await expect(h.client.readResource({ uri })).rejects.toThrow(/not found/i);
    }
  });

  it('completes the template variables from the catalog', async () => {
    const complete = (name: string, value: string, args?: Record<string, string>) =>
      h.client.complete({
        ref: { type: 'ref/resource', uri: 'postgres://{database}/{schema}/{table}/schema' },
        argument: { name, value },
        ...(args === undefined ? {} : { context: { arguments: args } }),
      });
    expect((await complete('database', company.db.name.slice(0, 4))).completion.values).toEqual([
      company.db.name,
    ]);
    expect((await complete('schema', 'p')).completion.values).toEqual(['public']);
    expect((await complete('table', 'ord', { schema: 'public' })).completion.values).toEqual([
      'order_items',
      'orders',
    ]);
    expect((await complete('table', 'sal', { schema: 'hr' })).completion.values).toEqual([]);
  });
});

describe('prompts', () => {
  it('lists the three prompts', async () => {
    const { prompts } = await modern.client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual([
      'postgres_explain_slow_query',
      'postgres_explore_schema',
      'postgres_write_safe_query',
    ]);
  });

  it('explores a schema with its tables listed', async () => {
    const prompt = await h.client.getPrompt({ name: 'postgres_explore_schema', arguments: {} });
    const body = (prompt.messages[0]!.content as { text: string }).text;
    expect(body).toContain('- customers (table, ~200 rows): People and companies who buy from us');
    expect(body).toContain('postgres_describe_table');
  });

  it('writes a safe query with the relevant table schemas embedded', async () => {
    const prompt = await modern.client.getPrompt({
      name: 'postgres_write_safe_query',
      arguments: { question: 'Which customers placed the most orders last month?' },
    });
    expect((prompt.messages[0]!.content as { text: string }).text).toContain(
      'Which customers placed the most orders last month?',
    );
    const embedded = prompt.messages
      .slice(1)
      .map((m) => m.content as { type: string; resource: { uri: string; text: string } });
    expect(embedded.every((c) => c.type === 'resource')).toBe(true);
    expect(embedded.map((c) => c.resource.uri)).toEqual(
      expect.arrayContaining([`${base}/public/customers/schema`, `${base}/public/orders/schema`]),
    );
    expect(embedded.find((c) => c.resource.uri.includes('/customers/'))!.resource.text).toContain(
      'email text [not null, MASKED]',
    );
    const chosen = await h.client.getPrompt({
      name: 'postgres_write_safe_query',
      arguments: { question: 'revenue by category', tables: 'products, order_items' },
    });
    expect(chosen.messages).toHaveLength(3);
  });

  it('explains a slow query with its plan and tables embedded', async () => {
    const prompt = await h.client.getPrompt({
      name: 'postgres_explain_slow_query',
      arguments: {
        sql: 'SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.country = $1',
      },
    });
    const body = (prompt.messages[0]!.content as { text: string }).text;
    expect(body).toMatch(/Its plan \(EXPLAIN, estimated costs\):\n.*Join/);
    expect(prompt.messages).toHaveLength(3);
    const refused = await h.client.getPrompt({
      name: 'postgres_explain_slow_query',
      arguments: { sql: 'DELETE FROM orders' },
    });
    expect((refused.messages[0]!.content as { text: string }).text).toMatch(
      /no plan: Refused .*rule statement_type/,
    );
  });
});
