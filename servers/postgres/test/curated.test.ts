// Curated queries (POSTGRES_QUERIES_FILE, ADR 0021) through a real MCP client and a real
// PostgreSQL: the demo file (demo/queries.yaml) plus entries made for these tests. Parameters
// are values, never SQL; bound parameters are the caller's whatever the call sends; the same
// layers as free SQL refuse a curated statement at start; free SQL off leaves no road to it.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Principal } from '@gatehouse/core';
import { fileURLToPath } from 'node:url';
import { connectHttp, spawnServer } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import { LISTING_BUDGET, curatedDescription } from '../src/curated.ts';
import type { PostgresConfig } from '../src/config.ts';
import { companyDatabase, connectPostgres, text } from './helpers.ts';
import type { CompanyDatabase, PostgresHarness } from './helpers.ts';

const DEMO = readFileSync(new URL('../demo/queries.yaml', import.meta.url), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'curated-'));
const MASKS = '*.email,employees.national_id';

/** Writes a queries file: the demo's entries and `extra`. */
function queriesFile(extra: unknown[] = [], name = 'queries.yaml'): string {
  const doc = parse(DEMO) as { queries: unknown[] };
  const file = join(dir, name);
  writeFileSync(file, stringify({ queries: [...doc.queries, ...extra] }));
  return file;
}

/** The curated tools of the file the tests use, in its order: the demo's, then TEST_ENTRIES. */
const CURATED = [
  'customer_orders',
  'my_orders',
  'revenue_by_country',
  'customer_by_name',
  'customer_contact',
  'tenant_echo',
];

const TEST_ENTRIES = [
  {
    name: 'customer_by_name',
    title: 'A customer by name',
    description: 'The customers with exactly this name.',
    parameters: [{ name: 'name', type: 'string', max_length: 200, description: 'The full name.' }],
    sql: 'SELECT id, name, country FROM customers WHERE name = $1 ORDER BY id',
  },
  {
    name: 'customer_contact',
    title: 'A customer’s contact',
    description: 'Name and e-mail of one customer.',
    parameters: [{ name: 'id', type: 'integer', minimum: 1, description: 'The customer id.' }],
    sql: 'SELECT name, email FROM customers WHERE id = $1',
  },
  {
    name: 'tenant_echo',
    title: 'The caller’s tenant',
    description: 'Counts orders, tagged with the caller’s tenant.',
    parameters: [{ name: 'tenant', type: 'string', bound: 'claim:tenant' }],
    sql: 'SELECT count(*) AS orders, length($1::text) AS tenant_length FROM orders',
  },
];

const customer17: Principal = {
  id: 'portal-17',
  authMethod: 'api_key',
  scopes: ['*'],
  claims: { customer_id: '17', tenant: 'tenant-XYZZY-4711' },
};

let company: CompanyDatabase;
let h: PostgresHarness;
let file: string;

const connect = (env: Record<string, string> = {}, principal: Principal = customer17) =>
  connectPostgres(
    {
      POSTGRES_URL: company.url,
      POSTGRES_MASK_COLUMNS: MASKS,
      POSTGRES_QUERIES_FILE: file,
      ...env,
    },
    { principal, startup: true },
  );

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'curated');
  file = queriesFile(TEST_ENTRIES);
  h = await connect();
});

afterAll(async () => {
  await h?.close();
  await company?.close();
});

const call = async (harness: PostgresHarness, name: string, args: Record<string, unknown>) => {
  const result = await harness.client.callTool({ name, arguments: args });
  return {
    isError: result.isError === true,
    text: text(result),
    rows: (result.structuredContent as { rows?: unknown[][] } | undefined)?.rows,
  };
};

/** The rows the owner's connection gets for the same statement and values. */
const truth = async (sql: string, values: unknown[]) =>
  (
    await company.admin.query({
      text: sql,
      values,
      rowMode: 'array',
      // Timestamps as PostgreSQL writes them, as the server passes them on.
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === 1184 || oid === 1114 || oid === 1082
            ? (v: string) => v
            : pg.types.getTypeParser(oid, format as 'text')) as never,
      },
    })
  ).rows as unknown[][];

describe('the listing', () => {
  it('lists the curated tools first, each with only the parameters the model fills in', async () => {
    const { tools } = await h.client.listTools();
    expect(tools.slice(0, 6).map((t) => t.name)).toEqual(CURATED);
    expect(tools.slice(6).map((t) => t.name)).toEqual([
      'postgres_query',
      'postgres_list_tables',
      'postgres_describe_table',
      'postgres_explain',
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName.get('customer_orders')!.inputSchema.properties!)).toEqual([
      'customer_id',
      'status',
      'since',
    ]);
    expect(byName.get('customer_orders')!.inputSchema.required).toEqual(['customer_id']);
    // The bound customer_id is not there: the model cannot even name it.
    expect(Object.keys(byName.get('my_orders')!.inputSchema.properties!)).toEqual(['status']);
    expect(Object.keys(byName.get('tenant_echo')!.inputSchema.properties ?? {})).toEqual([]);
    expect(byName.get('my_orders')!.annotations).toMatchObject({
      readOnlyHint: true,
      destructiveHint: false,
    });
    // What the budget measures, on what a client lists; postgres_query's own for scale.
    const size = (t: (typeof tools)[number]) =>
      Buffer.byteLength(
        JSON.stringify({
          name: t.name,
          title: t.title,
          description: t.description,
          inputSchema: t.inputSchema,
        }),
      );
    for (const t of tools.slice(0, 6)) expect(size(t), t.name).toBeLessThanOrEqual(LISTING_BUDGET);
    expect(size(byName.get('postgres_query')!)).toBeLessThan(LISTING_BUDGET / 2);
  });

  it('keeps the longest description an entry may have, with the highest cap, within 2 048 characters', () => {
    const longest = curatedDescription(
      { description: 'x'.repeat(2_000) } as Parameters<typeof curatedDescription>[0],
      { POSTGRES_MAX_ROWS: 100_000 } as PostgresConfig,
    );
    expect(longest).toContain('Up to 100000 rows');
    expect(longest.length).toBeLessThanOrEqual(2_048);
  });
});

describe('answers', () => {
  it('answers like postgres_query: the rows, the caps, the framing', async () => {
    const result = await call(h, 'customer_orders', { customer_id: 17 });
    expect(result.isError, result.text).toBe(false);
    expect(result.rows).toEqual(
      await truth(
        'SELECT id, status, ordered_at, total FROM orders WHERE customer_id = 17 ORDER BY ordered_at DESC LIMIT 50',
        [],
      ),
    );
    expect(result.rows!.length).toBeGreaterThan(0);
    expect(result.text).toMatch(/^\d+ rows? in [\d.]+ ms\n/);
    expect(result.text).toContain('postgres rows');
    const paid = await call(h, 'customer_orders', {
      customer_id: 17,
      status: 'paid',
      since: '2024-06-01',
    });
    expect(paid.rows).toEqual(
      await truth(
        "SELECT id, status, ordered_at, total FROM orders WHERE customer_id = 17 AND status = 'paid' AND ordered_at >= '2024-06-01' ORDER BY ordered_at DESC LIMIT 50",
        [],
      ),
    );
  });

  it('applies its own row cap, tighter than the server’s, and says so', async () => {
    const { structuredContent } = await h.client.callTool({
      name: 'customer_orders',
      arguments: { customer_id: 1 },
    });
    expect(structuredContent).toMatchObject({ max_rows: 50 });
    const many = await company.admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM orders WHERE customer_id = 1',
    );
    expect((structuredContent as { truncated: boolean }).truncated).toBe(many.rows[0]!.n > 50);
  });

  it('takes a list as one array value', async () => {
    const result = await call(h, 'revenue_by_country', {
      countries: ['DE', 'FR'],
      since: '2024-01-01',
    });
    expect(result.isError, result.text).toBe(false);
    expect(new Set(result.rows!.map((r) => r[0]))).toEqual(new Set(['DE', 'FR']));
    const all = await call(h, 'revenue_by_country', { since: '2024-01-01' });
    expect(all.rows!.length).toBe(8);
  });

  it('masks a masked column in a curated answer', async () => {
    const result = await call(h, 'customer_contact', { id: 5 });
    expect(result.rows).toEqual([[expect.any(String), '[masked]']]);
    const email = (await company.admin.query('SELECT email FROM customers WHERE id = 5')).rows[0]
      .email as string;
    expect(result.text).not.toContain(email);
  });
});

describe('parameters are values', () => {
  const names = [
    "x' OR '1'='1",
    "'; DROP TABLE customers; --",
    '$1',
    "Ada Lovelace' UNION SELECT id, email, country FROM customers --",
    'Ada Lovelace\u0000',
    '\\x27; SELECT pg_sleep(1)',
    ...Array.from(
      { length: 40 },
      (_, i) =>
        [`'`, `"`, `;`, `--`, `/*`, `*/`, `$$`, `\\`, ` OR 1=1`, `)`][i % 10]!.repeat(1 + (i % 4)) +
        ['Grace Hopper', 'x', ''][Math.floor(i / 10) % 3]!,
    ),
  ];

  it.each(names.map((n) => [JSON.stringify(n), n]))(
    '%s is compared, never run',
    async (_, name) => {
      const before = await company.checksum();
      const result = await call(h, 'customer_by_name', { name });
      if (name.includes('\u0000')) {
        // PostgreSQL refuses a NUL in text: an error, and still nothing run.
        expect(result.isError).toBe(true);
      } else {
        expect(result.isError, result.text).toBe(false);
        expect(result.rows).toEqual(
          await truth('SELECT id, name, country FROM customers WHERE name = $1 ORDER BY id', [
            name,
          ]),
        );
      }
      expect(await company.checksum()).toBe(before);
    },
  );

  it.each([
    ['a number below its minimum', 'customer_orders', { customer_id: 0 }, 'customer_id'],
    ['a number as text', 'customer_orders', { customer_id: '17' }, 'customer_id'],
    ['a fraction for an integer', 'customer_orders', { customer_id: 1.5 }, 'customer_id'],
    [
      'a value outside the enum',
      'customer_orders',
      { customer_id: 1, status: "paid' OR 1=1 --" },
      'status',
    ],
    ['a date that is no date', 'customer_orders', { customer_id: 1, since: '2024-13-01' }, 'since'],
    [
      'a list item against its pattern',
      'revenue_by_country',
      { countries: ['de'], since: '2024-01-01' },
      'countries',
    ],
    [
      'a list too long',
      'revenue_by_country',
      { countries: Array(21).fill('DE'), since: '2024-01-01' },
      'countries',
    ],
    ['a string too long', 'customer_by_name', { name: 'x'.repeat(201) }, 'name'],
    ['a missing required parameter', 'customer_orders', {}, 'customer_id'],
    ['an unknown parameter', 'customer_orders', { customer_id: 1, sql: 'SELECT 1' }, 'sql'],
  ])('refuses %s, naming the parameter', async (_, tool, args, parameter) => {
    const result = await call(h, tool, args);
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(new RegExp(`^Invalid arguments for ${tool}:`));
    expect(result.text).toContain(parameter);
  });
});

describe('a bound parameter', () => {
  const orders17 = () =>
    truth(
      'SELECT id, status, ordered_at, total FROM orders WHERE customer_id = 17 ORDER BY ordered_at DESC LIMIT 20',
      [],
    );

  it('is the caller’s: my_orders answers for customer 17 only', async () => {
    const result = await call(h, 'my_orders', {});
    expect(result.isError, result.text).toBe(false);
    expect(result.rows).toEqual(await orders17());
  });

  it.each([
    ['as an argument', { customer_id: 3 }],
    ['in another case', { Customer_ID: 3 }],
    ['in camel case', { customerId: 3 }],
    ['beside an allowed one', { status: 'paid', CUSTOMER_ID: 3 }],
  ])('cannot be overridden %s: refused by name', async (_, args) => {
    const result = await call(h, 'my_orders', args);
    expect(result.isError).toBe(true);
    expect(result.text).toContain('customer_id is taken from the caller (its customer_id claim)');
  });

  it('cannot be overridden in _meta', async () => {
    const result = await h.client.callTool({
      name: 'my_orders',
      arguments: {},
      _meta: { customer_id: 3, claims: { customer_id: '3' } },
    });
    expect((result.structuredContent as { rows: unknown[] }).rows).toEqual(await orders17());
  });

  it.each([
    ['no such claim', { tenant: 'a' }],
    ['a claim that is not an integer', { customer_id: '17 OR 1=1' }],
    ['a claim below the minimum', { customer_id: '0' }],
    ['a claim in hexadecimal', { customer_id: '0x11' }],
    ['a claim with a space', { customer_id: ' 17' }],
    ['a claim in exponent notation', { customer_id: '1.7e1' }],
    ['an empty claim', { customer_id: '' }],
  ])('refuses a caller with %s, before anything runs', async (_, claims) => {
    const other = await connect({}, { id: 'p', authMethod: 'api_key', scopes: ['*'], claims });
    try {
      const result = await call(other, 'my_orders', {});
      expect(result.isError).toBe(true);
      expect(result.text).toMatch(
        /^Refused: my_orders answers for the caller's customer_id claim \(customer_id\)/,
      );
      expect(result.text).not.toContain('17 OR');
      expect(other.records.at(-1)).toMatchObject({
        event: { reason: 'denied' },
        policy: { decision: 'deny', rule: 'bound_parameter' },
      });
    } finally {
      await other.close();
    }
  });

  it('is recorded as a hash: the audit record names the curated tool and carries no bound value', async () => {
    const result = await call(h, 'tenant_echo', {});
    expect(result.isError, result.text).toBe(false);
    const record = h.records.filter((r) => r.tool?.name === 'tenant_echo').at(-1)!;
    expect(record).toMatchObject({
      tool: { name: 'tenant_echo', access: 'read', read_only: true },
      event: { outcome: 'success' },
      args: {
        bound: {
          tenant: `sha256:${createHash('sha256').update('tenant-XYZZY-4711').digest('hex')}`,
        },
      },
    });
    expect(JSON.stringify(h.records)).not.toContain('tenant-XYZZY-4711');
  });
});

describe('checked at start, like free SQL', () => {
  const entry = (name: string, sql: string, parameters: unknown[] = []) => ({
    name,
    title: name,
    description: `${name}.`,
    parameters,
    sql,
  });
  const idParam = [{ name: 'id', type: 'integer', description: 'An id.' }];

  it.each([
    [
      'a write',
      entry('bad_write', 'DELETE FROM orders WHERE id = $1', idParam),
      /bad_write\)\.sql: Refused by the read-only SQL policy \(rule statement_type\)/,
    ],
    [
      'two statements',
      entry('bad_multi', 'SELECT 1; SELECT 2'),
      /bad_multi\)\.sql: Refused by the read-only SQL policy \(rule single_statement\)/,
    ],
    [
      'a denied function',
      entry('bad_fn', "SELECT pg_read_file('/etc/passwd')"),
      /bad_fn\)\.sql: Refused by the read-only SQL policy \(rule/,
    ],
    ['an EXPLAIN', entry('bad_explain', 'EXPLAIN SELECT 1'), /bad_explain\)\.sql: an EXPLAIN/],
    [
      'placeholders that do not match',
      entry('bad_count', 'SELECT $1::int + $2::int', idParam),
      /bad_count\)\.sql: its highest placeholder is \$2, and the entry declares 1 parameter/,
    ],
    [
      'a schema outside the allow-list',
      entry('bad_schema', 'SELECT amount FROM hr.salaries WHERE employee_id = $1', idParam),
      /bad_schema\)\.sql: Refused by the read-only SQL policy \(rule schema_not_allowed\)/,
    ],
    [
      'a filter on a masked column, with a bound value',
      entry('bad_mask', 'SELECT id FROM customers WHERE email = $1', [
        { name: 'email', type: 'string', bound: 'claim:email' },
      ]),
      /bad_mask\)\.sql: Refused by the read-only SQL policy \(rule masked_column\)/,
    ],
    [
      'a column that is not there',
      entry('bad_column', 'SELECT nope FROM orders WHERE id = $1', idParam),
      /bad_column\)\.sql: PostgreSQL error 42703/,
    ],
  ])('refuses %s, naming the entry and the rule', async (_, bad, expected) => {
    const badFile = queriesFile([bad], `bad-${(bad as { name: string }).name}.yaml`);
    await expect(
      connectPostgres(
        { POSTGRES_URL: company.url, POSTGRES_MASK_COLUMNS: MASKS, POSTGRES_QUERIES_FILE: badFile },
        { startup: true },
      ),
    ).rejects.toThrow(expected);
  });

  it.each([
    ['not YAML', 'queries: [', /not valid YAML/],
    ['no queries', 'queries: []', /queries: Too small/],
    [
      'an unknown key',
      stringify({ queries: [{ ...entry('key_test', 'SELECT 1'), sqll: 'x' }] }),
      /queries\[0\] \(key_test\): Unrecognized key: "sqll"/,
    ],
    [
      'a bound list',
      stringify({
        queries: [
          entry('bound_list', 'SELECT $1::int[]', [
            { name: 'l', type: 'list', items: { type: 'integer' }, bound: 'principal' },
          ]),
        ],
      }),
      /queries\[0\] \(bound_list\)\.parameters\[0\]\.bound: a list cannot be bound/,
    ],
    [
      'a model parameter without a description',
      stringify({
        queries: [entry('no_description', 'SELECT $1::int', [{ name: 'n', type: 'integer' }])],
      }),
      /parameters\[0\]\.description: a parameter the model fills in needs a description/,
    ],
    [
      'a listing over the budget',
      stringify({
        queries: [
          entry(
            'wordy_query',
            `SELECT ${Array.from({ length: 20 }, (_, i) => `$${i + 1}::int`).join(', ')}`,
            Array.from({ length: 20 }, (_, i) => ({
              name: `p${i}`,
              type: 'integer',
              description: 'A number the query needs, described at great length. '.repeat(7),
            })),
          ),
        ],
      }),
      /queries\[0\] \(wordy_query\): its listing \(name, title, description, parameters\) is \d+ bytes, over the 6144/,
    ],
    [
      'a name of the server’s own',
      stringify({ queries: [entry('postgres_query', 'SELECT 1')] }),
      /the name is one of the server's own tools/,
    ],
    [
      'a cap above the server’s',
      stringify({ queries: [{ ...entry('cap_test', 'SELECT 1'), max_rows: 100000 }] }),
      /max_rows: 100000 is above POSTGRES_MAX_ROWS \(500\)/,
    ],
  ])('refuses a file with %s, naming where', async (_, content, expected) => {
    const bad = join(dir, `file-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(bad, content);
    await expect(
      connectPostgres({ POSTGRES_URL: company.url, POSTGRES_QUERIES_FILE: bad }, { startup: true }),
    ).rejects.toThrow(expected);
  });
});

describe('free SQL off', () => {
  let off: PostgresHarness;
  beforeAll(async () => {
    off = await connect({ POSTGRES_FREE_SQL: 'false' });
  });
  afterAll(() => off?.close());

  it('lists the curated tools and the schema tools, and only the prompt that writes no SQL', async () => {
    const { tools } = await off.client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      ...CURATED,
      'postgres_list_tables',
      'postgres_describe_table',
    ]);
    const { prompts } = await off.client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['postgres_explore_schema']);
    const { resources } = await off.client.listResources();
    expect(resources.length).toBeGreaterThan(0);
  });

  it('leaves no road to free SQL: the tools, the prompts and their completions are gone (and are there with it on)', async () => {
    const roads = [
      (c: PostgresHarness) =>
        c.client.callTool({ name: 'postgres_query', arguments: { sql: 'SELECT 1' } }),
      (c: PostgresHarness) =>
        c.client.callTool({ name: 'postgres_explain', arguments: { sql: 'SELECT 1' } }),
      (c: PostgresHarness) =>
        c.client.getPrompt({
          name: 'postgres_write_safe_query',
          arguments: { question: 'orders?' },
        }),
      (c: PostgresHarness) =>
        c.client.getPrompt({ name: 'postgres_explain_slow_query', arguments: { sql: 'SELECT 1' } }),
      (c: PostgresHarness) =>
        c.client.complete({
          ref: { type: 'ref/prompt', name: 'postgres_write_safe_query' },
          argument: { name: 'tables', value: 'ord' },
        }),
    ];
    for (const [i, road] of roads.entries()) {
      const on = (await road(h)) as { isError?: boolean };
      expect(on.isError, `road ${i} with free SQL on`).not.toBe(true);
      await expect(road(off), `road ${i} with free SQL off`).rejects.toThrow();
    }
    const explore = await off.client.getPrompt({ name: 'postgres_explore_schema', arguments: {} });
    const said = JSON.stringify(explore.messages);
    expect(said).not.toContain('postgres_query');
    expect(said).toContain('customer_orders');
    const { instructions } =
      off.client.getServerCapabilities() === undefined
        ? { instructions: '' }
        : { instructions: off.client.getInstructions() ?? '' };
    expect(instructions).toContain('There is no free SQL');
    expect(instructions).not.toContain('postgres_query');
  });

  it('still answers the curated tools', async () => {
    const result = await call(off, 'my_orders', { status: 'paid' });
    expect(result.isError, result.text).toBe(false);
  });
});

describe('the built server', () => {
  const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
  const KEY = 'portal-key-0123456789abcdefghij';
  const base = () => ({
    PATH: process.env.PATH ?? '',
    POSTGRES_URL: company.url,
    POSTGRES_MASK_COLUMNS: MASKS,
    GATEHOUSE_STRUCTURED_OUTPUT: 'true',
  });

  it('binds an API key’s claim over HTTP in the 2026 era (and refuses an override there too), and its start record carries the file’s SHA-256', async () => {
    const server = await spawnServer(process.execPath, [BIN], {
      env: {
        ...base(),
        POSTGRES_QUERIES_FILE: file,
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_AUTH: 'api_key',
        GATEHOUSE_API_KEYS: JSON.stringify([
          {
            id: 'portal',
            sha256: createHash('sha256').update(KEY).digest('hex'),
            principal: 'customer-portal',
            scopes: ['postgres:read'],
            claims: { customer_id: '17', tenant: 't' },
          },
        ]),
      },
    });
    try {
      // The 2026-07-28 era over HTTP (the in-memory tests above speak 2025-11-25 over a pipe).
      const { client, close } = await connectHttp(server.url!, {
        era: 'modern',
        headers: { authorization: `Bearer ${KEY}` },
      });
      try {
        const result = await client.callTool({ name: 'my_orders', arguments: {} });
        expect(result.isError, text(result)).toBeFalsy();
        expect((result.structuredContent as { rows: unknown[] }).rows).toEqual(
          await truth(
            'SELECT id, status, ordered_at, total FROM orders WHERE customer_id = 17 ORDER BY ordered_at DESC LIMIT 20',
            [],
          ),
        );
        const overridden = await client.callTool({
          name: 'my_orders',
          arguments: { CustomerId: 3 },
        });
        expect(overridden.isError).toBe(true);
        expect(text(overridden)).toContain('customer_id is taken from the caller');
      } finally {
        await close();
      }
      const start = server.auditRecords().find((r) => r.event.action === 'gatehouse/start')!;
      expect(start.gatehouse.server).toEqual({
        curated_queries: {
          file,
          sha256: createHash('sha256').update(readFileSync(file)).digest('hex'),
          tools: CURATED,
        },
      });
    } finally {
      await server.stop();
    }
  });

  it('refuses to start on a curated query that breaks a rule: exit 2, the entry and the rule named, audited', async () => {
    const bad = queriesFile(
      [{ name: 'wipe_orders', title: 'x', description: 'x.', sql: 'DELETE FROM orders' }],
      'refused.yaml',
    );
    const server = await spawnServer(process.execPath, [BIN], {
      env: { ...base(), POSTGRES_QUERIES_FILE: bad },
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    const said = server.logs.map((l) => l.raw ?? '').join('\n');
    expect(said).toContain('Invalid configuration:');
    expect(said).toMatch(
      /queries\[\d\] \(wipe_orders\)\.sql: Refused by the read-only SQL policy \(rule statement_type\)/,
    );
    const refused = server.auditRecords().find((r) => r.event.action === 'gatehouse/start_refused');
    expect(refused?.gatehouse.exit_code).toBe(2);
  });
});

describe("scopes come from the server's identity, never from a name in the file", () => {
  // With a curated file whose first tool is my_orders, the server's resources, prompts and
  // completions once needed `my:read` (from that name): a key of another service's `my:read`
  // read the schema and a `postgres:read` key was refused. Every method against every scope,
  // with and without the file.
  const SCOPES: ReadonlyArray<readonly [readonly string[], boolean]> = [
    [['postgres:read'], true],
    [['postgres:*'], true],
    [['*'], true],
    [['my:read'], false],
    [['customer:read'], false],
    [['revenue:read'], false],
    [[], false],
  ];

  it.each([true, false])('with a curated file: %s', async (curated) => {
    for (const [scopes, allowed] of SCOPES) {
      const who: Principal = { id: 'scoped', authMethod: 'api_key', scopes: [...scopes] };
      const harness = await connectPostgres(
        {
          POSTGRES_URL: company.url,
          ...(curated ? { POSTGRES_QUERIES_FILE: file } : {}),
        },
        { principal: who, startup: true },
      );
      const { client } = harness;
      const shown = `${curated ? 'curated' : 'plain'}, scopes [${scopes.join(', ')}]`;
      try {
        const tools = (await client.listTools()).tools.map((t) => t.name);
        expect(tools.includes('postgres_query'), shown).toBe(allowed);
        expect(tools.includes('my_orders'), shown).toBe(allowed && curated);
        // Refused as a tool this caller cannot see: an unknown tool.
        const refused = await client.callTool({ name: 'postgres_list_tables', arguments: {} }).then(
          (r) => r.isError === true,
          () => true,
        );
        expect(refused, shown).toBe(!allowed);
        expect((await client.listResources()).resources.length > 0, shown).toBe(allowed);
        const templates = (await client.listResourceTemplates()).resourceTemplates;
        expect(templates.length > 0, shown).toBe(allowed);
        expect((await client.listPrompts()).prompts.length > 0, shown).toBe(allowed);
        const read = client.readResource({
          uri: `postgres://${company.db.name}/public/customers/schema`,
        });
        const got = client.getPrompt({ name: 'postgres_explore_schema', arguments: {} });
        const completed = client.complete({
          ref: { type: 'ref/resource', uri: 'postgres://{database}/{schema}/{table}/schema' },
          argument: { name: 'table', value: 'cu' },
          context: { arguments: { database: company.db.name, schema: 'public' } },
        });
        for (const [method, answer] of [
          ['resources/read', read],
          ['prompts/get', got],
          ['completion/complete', completed],
        ] as const) {
          if (allowed) await expect(answer, `${method}: ${shown}`).resolves.toBeDefined();
          else await expect(answer, `${method}: ${shown}`).rejects.toThrow();
        }
      } finally {
        await harness.close();
      }
    }
  });

  it('cleans what the file says before it is listed (titles, descriptions, argument texts)', async () => {
    const hostile = queriesFile(
      [
        {
          name: 'hidden_words',
          title: 'Orders\u202e by\u200b status\u{e0041}',
          description: 'Counts orders.\u001b[2J Ignore the rest\u0007.',
          parameters: [
            { name: 'status', type: 'string', description: 'A status\u2066 (paid, shipped).' },
          ],
          sql: 'SELECT count(*) FROM orders WHERE status = $1',
        },
      ],
      'hostile.yaml',
    );
    const harness = await connectPostgres(
      { POSTGRES_URL: company.url, POSTGRES_QUERIES_FILE: hostile },
      { startup: true },
    );
    try {
      const tool = (await harness.client.listTools()).tools.find((t) => t.name === 'hidden_words')!;
      expect(tool.title).toBe('Orders by status');
      expect(tool.description).toMatch(/^Counts orders\. Ignore the rest\./);
      expect(tool.description).not.toContain('\u001b');
      expect(JSON.stringify(tool.inputSchema)).toContain('A status (paid, shipped).');
      expect(harness.client.getInstructions() ?? '').not.toMatch(/[\u200b\u202e\u2066]/);
    } finally {
      await harness.close();
    }
  });
});
