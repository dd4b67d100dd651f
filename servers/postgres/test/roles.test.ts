import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@gatehouse/core';
import { createLogger } from '@gatehouse/core/runtime';
import type { Principal } from '@gatehouse/core';
import { connectHttp, connectStdio, spawnServer } from '@gatehouse/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PostgresConfigSchema } from '../src/config.ts';
import { IdentityChangedError, PostgresDatabase } from '../src/sql/database.ts';
import type { DbCall } from '../src/sql/database.ts';
import { CappedRows, NO_MASK } from '../src/sql/execute.ts';
import { loadRoleMap } from '../src/role-map.ts';
import {
  FIXTURE_MASKS,
  addMaskingFixture,
  companyDatabase,
  connectPostgres,
  text,
} from './helpers.ts';
import type { CompanyDatabase, PostgresHarness } from './helpers.ts';
import { ROADS, SINKS } from './roads.ts';

// A role per caller (ADR 0027): each call runs as the PostgreSQL role the role map gives its
// verified caller, with gatehouse.principal set for row-level security. The oracle throughout is
// PostgreSQL itself: the same statement run directly as that role (SET LOCAL ROLE, the same
// settings) by the tables' owner.

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const ROLE_PER_CALLER = readFileSync(
  new URL('../demo/role-per-caller.sql', import.meta.url),
  'utf8',
);

const ANA = 'ana@company.example';
const REX = 'rex@company.example';

let company: CompanyDatabase;
/** The roles of this run (cluster-wide names, so each run has its own). */
let login: string;
let analyst: string;
let rep: string;
let loginUrl: string;
let work: string;
let mapFile: string;

function principal(id: string, claims: Record<string, string> = {}): Principal {
  return { id, authMethod: 'api_key', scopes: ['*'], claims };
}

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'roles');
  await addMaskingFixture(company);
  const tag = randomBytes(4).toString('hex');
  login = `gh_${tag}_login`;
  analyst = `gh_${tag}_analyst`;
  rep = `gh_${tag}_rep`;
  const password = randomBytes(12).toString('hex');
  // The documented set-up (demo/role-per-caller.sql), under this run's names.
  await company.admin.query(
    ROLE_PER_CALLER.replaceAll('gatehouse_login', login)
      .replace(/\banalyst\b/g, analyst)
      .replace(/\bsales_rep\b/g, rep)
      .replace("'change-me'", `'${password}'`)
      .replaceAll('"company"', `"${company.db.name}"`),
  );
  // The masking fixture's tables for the rep as well (not order_items or employees): the
  // non-interference run below then compares two roles that both read them.
  await company.admin.query(
    `GRANT SELECT ON payroll, people, visitors, tokens, notes, identities, staff, staff_v2,
       staff_lower, staff_filtered, staff_mv, lock_view TO ${rep}`,
  );
  const url = new URL(company.db.url);
  url.username = login;
  url.password = password;
  loginUrl = url.toString();
  work = mkdtempSync(join(tmpdir(), 'gatehouse-roles-'));
  mapFile = writeMap('map.yaml', {
    rules: [
      { principal: ANA, role: analyst },
      { claim: { name: 'team', value: 'sales' }, role: rep },
    ],
  });
}, 120_000);

afterAll(async () => {
  await company?.close();
  const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await admin.connect();
  for (const role of [login, analyst, rep]) {
    if (role !== undefined) await admin.query(`DROP ROLE IF EXISTS ${role}`);
  }
  await admin.end();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

function writeMap(name: string, map: unknown): string {
  const file = join(work, name);
  writeFileSync(file, JSON.stringify(map));
  return file;
}

/** The two principals of the role map: Ana by id, Rex by a claim of his API key. */
const CALLERS = {
  ana: () => principal(ANA),
  rex: () => principal(REX, { team: 'sales' }),
};

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    POSTGRES_URL: loginUrl,
    POSTGRES_ROLE_MAP_FILE: mapFile,
    POSTGRES_MASK_COLUMNS: FIXTURE_MASKS,
    ...extra,
  };
}

let serialised: Promise<unknown> = Promise.resolve();

/**
 * What PostgreSQL answers `sql` run directly as `role` with the call's settings: rows as arrays,
 * or the error's SQLSTATE. One at a time on the owner's connection.
 */
function truth(
  role: string,
  principalId: string,
  sql: string,
  params: readonly unknown[] = [],
): Promise<{ rows: unknown[][] } | { error: string }> {
  const run = async () => {
    const { admin } = company;
    await admin.query('BEGIN READ ONLY');
    try {
      await admin.query(
        `SELECT set_config('role', $1, true), set_config('gatehouse.principal', $2, true),
                set_config('search_path', 'public', true)`,
        [role, principalId],
      );
      const result = await admin.query({ text: sql, values: [...params], rowMode: 'array' });
      return { rows: result.rows as unknown[][] };
    } catch (error) {
      return { error: (error as { code?: string }).code ?? 'unknown' };
    } finally {
      await admin.query('ROLLBACK');
    }
  };
  const next = serialised.then(run, run);
  serialised = next;
  return next;
}

/** The rows of a structured answer, or the answer's text when it is an error. */
function rowsOf(result: { isError?: unknown; structuredContent?: unknown }): unknown {
  if (result.isError === true) return { isError: true, text: text(result) };
  return (result.structuredContent as { rows: unknown[][] }).rows;
}

const QUESTIONS = [
  'SELECT id, country FROM customers ORDER BY id',
  'SELECT count(*)::int FROM orders',
  'SELECT status, count(*)::int FROM orders GROUP BY status ORDER BY status',
  'SELECT count(*)::int FROM order_items',
  'SELECT id, name FROM employees ORDER BY id LIMIT 3',
  'SELECT principal, country FROM sales_regions ORDER BY 1, 2',
  'SELECT current_user::text',
  "SELECT current_setting('gatehouse.principal', true)",
];

describe('each caller reads as their mapped role', () => {
  let servers: Record<'ana' | 'rex', PostgresHarness>;
  beforeAll(async () => {
    servers = {
      ana: await connectPostgres(env(), { principal: CALLERS.ana(), startup: true }),
      rex: await connectPostgres(env(), { principal: CALLERS.rex(), startup: true }),
    };
  });
  afterAll(async () => {
    await servers?.ana.close();
    await servers?.rex.close();
  });

  it('answers exactly what PostgreSQL answers that role — rows, row-level security, denials', async () => {
    const seen = { ana: new Set<string>(), rex: new Set<string>() };
    for (const sql of QUESTIONS) {
      for (const [who, role, id] of [
        ['ana', analyst, ANA],
        ['rex', rep, REX],
      ] as const) {
        const result = await servers[who].client.callTool({
          name: 'postgres_query',
          arguments: { sql },
        });
        const expected = await truth(role, id, sql);
        if ('error' in expected) {
          expect(expected.error, sql).toBe('42501');
          expect(result.isError, `${who}: ${sql}`).toBe(true);
          expect(text(result)).toContain('PostgreSQL denied access: permission denied for table');
        } else {
          expect(rowsOf(result), `${who}: ${sql}`).toEqual(expected.rows);
        }
        seen[who].add(JSON.stringify(rowsOf(result)));
      }
    }
    // The two worlds really differ: Rex sees his region's customers only, and no employees.
    const customers = async (who: 'ana' | 'rex') =>
      rowsOf(
        await servers[who].client.callTool({
          name: 'postgres_query',
          arguments: { sql: 'SELECT DISTINCT country FROM customers ORDER BY 1' },
        }),
      );
    expect(await customers('rex')).toEqual([['NL'], ['SE']]);
    expect((await customers('ana')) as unknown[]).toHaveLength(8);
  });

  it('records the role each call ran as; a caller with no mapping is refused, never the login role', async () => {
    const before = servers.rex.records.length;
    await servers.rex.client.callTool({
      name: 'postgres_query',
      arguments: { sql: 'SELECT 1 AS one' },
    });
    const record = servers.rex.records.slice(before).find((r) => r.mcp?.name === 'postgres_query');
    expect(record?.user).toEqual({
      id: REX,
      effective: { id: rep, name: rep, domain: `pg:${company.db.name}` },
    });

    const stranger = await connectPostgres(env(), { principal: principal('mallory@elsewhere') });
    try {
      for (const [name, args] of [
        ['postgres_query', { sql: 'SELECT 1 AS one' }],
        ['postgres_list_tables', {}],
        ['postgres_describe_table', { table: 'customers' }],
      ] as const) {
        const refused = await stranger.client.callTool({ name, arguments: args });
        expect(refused.isError, name).toBe(true);
        expect(text(refused)).toContain(
          'No database role is mapped to you (principal "mallory@elsewhere")',
        );
      }
      // Listing resources is no error, and lists no table; completions offer nothing; reading
      // is refused alike (another road to the same database).
      const { resources } = await stranger.client.listResources();
      expect(resources.map((r) => r.name)).toEqual(['postgres_schemas']);
      const completed = await stranger.client.complete({
        ref: { type: 'ref/resource', uri: 'postgres://{database}/{schema}/{table}/schema' },
        argument: { name: 'table', value: 'cu' },
        context: { arguments: { database: company.db.name, schema: 'public' } },
      });
      expect(completed.completion.values).toEqual([]);
      await expect(
        stranger.client.readResource({ uri: `postgres://${company.db.name}/schemas` }),
      ).rejects.toThrow(/No database role is mapped to you/);
      await expect(
        stranger.client.getPrompt({ name: 'postgres_explore_schema', arguments: {} }),
      ).rejects.toThrow(/No database role is mapped to you/);
      const denied = stranger.records.filter((r) => r.event.outcome === 'failure');
      expect(denied.length).toBeGreaterThanOrEqual(4);
      for (const r of denied) {
        expect(r.policy).toMatchObject({ decision: 'deny', rule: 'role_map' });
        expect(r.user?.effective).toBeUndefined();
      }
    } finally {
      await stranger.close();
    }
  });

  it('refuses every way a caller could set or reset the role or the settings from SQL', async () => {
    await company.admin.query(`
      CREATE FUNCTION public.become(text) RETURNS int LANGUAGE sql STABLE
        AS $$ SELECT length(set_config('role', $1, true)) $$;
      CREATE FUNCTION public.pretend() RETURNS int LANGUAGE plpgsql STABLE
        AS $$ BEGIN EXECUTE 'SELECT set_' || 'config(''gatehouse.principal'', ''${ANA}'', true)'; RETURN 1; END $$;
      CREATE FUNCTION public.as_analyst() RETURNS int LANGUAGE sql STABLE
        AS $$ SELECT count(*)::int FROM customers $$;
      ALTER FUNCTION public.as_analyst() SET role = ${analyst};
      GRANT EXECUTE ON FUNCTION public.become(text), public.pretend(), public.as_analyst() TO ${rep}`);
    const attempts: Array<[string, RegExp]> = [
      [`SELECT set_config('role', '${analyst}', true)`, /set_config\(\) is not allowed/],
      [
        `SELECT set_config('gatehouse.principal', '${ANA}', true), count(*) FROM customers`,
        /set_config\(\) is not allowed/,
      ],
      [`SET ROLE ${analyst}`, /rule statement_type/],
      ['RESET ROLE', /rule statement_type/],
      [`SET SESSION AUTHORIZATION ${analyst}`, /rule statement_type/],
      [`SET gatehouse.principal = '${ANA}'`, /rule statement_type/],
      ['COMMIT', /rule statement_type/],
      [`SELECT 1; RESET ROLE`, /exactly one statement|one statement/],
      [`ROLLBACK; SELECT count(*) FROM customers`, /exactly one statement|one statement|rule/],
      [`SELECT become('${analyst}'), count(*) FROM customers`, /rule function_switches_role/],
      ['SELECT pretend(), count(*) FROM customers', /rule function_switches_role/],
      ['SELECT as_analyst()', /rule function_switches_role/],
    ];
    try {
      for (const [sql, refusal] of attempts) {
        const result = await servers.rex.client.callTool({
          name: 'postgres_query',
          arguments: { sql },
        });
        expect(result.isError, sql).toBe(true);
        expect(text(result), sql).toMatch(refusal);
      }
      // After all that, Rex still reads as himself.
      const after = await servers.rex.client.callTool({
        name: 'postgres_query',
        arguments: { sql: "SELECT current_user::text, current_setting('gatehouse.principal')" },
      });
      expect(rowsOf(after)).toEqual([[rep, REX]]);
    } finally {
      await company.admin.query(
        'DROP FUNCTION public.become(text), public.pretend(), public.as_analyst()',
      );
    }
  });

  it('lists and describes what the caller’s role may read, as the catalog says for that role', async () => {
    for (const [who, role] of [
      ['ana', analyst],
      ['rex', rep],
    ] as const) {
      const listed = await servers[who].client.callTool({
        name: 'postgres_list_tables',
        arguments: {},
      });
      const tables = (
        listed.structuredContent as { tables: Array<{ name: string; readable: boolean }> }
      ).tables;
      const expected = await company.admin.query<{ name: string; readable: boolean }>(
        `SELECT c.relname AS name, has_table_privilege($1, c.oid, 'SELECT') AS readable
         FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
           AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition ORDER BY 1`,
        [role],
      );
      expect(
        tables.map((t) => [t.name, t.readable]),
        who,
      ).toEqual(expected.rows.map((r) => [r.name, r.readable]));
    }
    const readable = async (who: 'ana' | 'rex', table: string) =>
      (
        (
          await servers[who].client.callTool({
            name: 'postgres_list_tables',
            arguments: { name_pattern: table },
          })
        ).structuredContent as { tables: Array<{ readable: boolean }> }
      ).tables[0]?.readable;
    expect(await readable('ana', 'employees')).toBe(true);
    expect(await readable('rex', 'employees')).toBe(false);
    // Completions run as the caller's role too, and complete what its catalog shows.
    const completed = await servers.rex.client.complete({
      ref: { type: 'ref/resource', uri: 'postgres://{database}/{schema}/{table}/schema' },
      argument: { name: 'table', value: 'cust' },
      context: { arguments: { database: company.db.name, schema: 'public' } },
    });
    expect(completed.completion.values).toContain('customers');
  });
});

describe('the last line: a changed identity is found after the statement, whatever the rules said', () => {
  let db: PostgresDatabase;
  const call = (id: string, claims: Record<string, string> = {}): DbCall => ({
    signal: AbortSignal.timeout(10_000),
    deadline: Date.now() + 10_000,
    principal: principal(id, claims),
  });
  beforeAll(() => {
    const config = loadConfig(PostgresConfigSchema, {
      POSTGRES_URL: loginUrl,
      POSTGRES_ROLE_MAP_FILE: mapFile,
      POSTGRES_POOL_SIZE: '1',
    });
    db = new PostgresDatabase(config, createLogger({ level: 'silent' }), ['public'], {
      roleMap: loadRoleMap(config),
    });
  });
  afterAll(async () => {
    await db?.close();
  });

  it('discards the rows of a statement that switched role or set a gatehouse setting, and drops the connection', async () => {
    for (const sql of [
      `SELECT set_config('role', '${analyst}', true) AS r, (SELECT count(*) FROM customers) AS n`,
      `SELECT set_config('gatehouse.principal', '${ANA}', true) AS p`,
      "SELECT set_config('role', 'none', true) AS r",
    ]) {
      const checkout = await db.checkout(call(REX, { team: 'sales' }));
      const rows = new CappedRows({ maxRows: 10, maxBytes: 10_000 }, NO_MASK);
      const outcome = checkout.run({ sql, params: [], rows, sessionCheck: true });
      await expect(outcome, sql).rejects.toBeInstanceOf(IdentityChangedError);
      expect(checkout.abandon(new Error('x'))).toBe(false);
    }
    // The one pooled connection was destroyed each time: the next call is itself again.
    const checkout = await db.checkout(call(REX, { team: 'sales' }));
    const rows = new CappedRows({ maxRows: 10, maxBytes: 10_000 }, NO_MASK);
    const output = await checkout.run({
      sql: "SELECT current_user::text AS u, current_setting('gatehouse.principal') AS p",
      params: [],
      rows,
      sessionCheck: false,
    });
    expect(output.rows).toEqual([[rep, REX]]);
  });

  it('refuses a transaction’s value when its role changed inside it', async () => {
    await expect(
      db.transaction(call(REX, { team: 'sales' }), async (client) => {
        await client.query(`SELECT set_config('role', '${analyst}', true)`);
        return (await client.query('SELECT count(*)::int AS n FROM customers')).rows[0];
      }),
    ).rejects.toBeInstanceOf(IdentityChangedError);
    const { rows } = await db.transaction(call(ANA), (client) =>
      client.query<{ u: string }>('SELECT current_user::text AS u'),
    );
    expect(rows).toEqual([{ u: analyst }]);
  });
});

describe('the built server', () => {
  const KEYS = { ana: `ana-key-${'a'.repeat(24)}`, rex: `rex-key-${'r'.repeat(24)}` };

  it('over HTTP, on a pool of one connection: interleaved calls of two callers each get their own role and settings', async () => {
    const server = await spawnServer(process.execPath, [BIN], {
      env: {
        PATH: process.env.PATH ?? '',
        ...env({ POSTGRES_POOL_SIZE: '1' }),
        GATEHOUSE_STRUCTURED_OUTPUT: 'true',
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_AUTH: 'api_key',
        GATEHOUSE_RATE_READ_PER_MIN: '100000',
        // Twelve calls each at once (the default allows eight per principal).
        GATEHOUSE_MAX_CONCURRENT_PER_PRINCIPAL: '32',
        GATEHOUSE_API_KEYS: JSON.stringify([
          {
            id: 'ana',
            sha256: createHash('sha256').update(KEYS.ana).digest('hex'),
            principal: ANA,
            scopes: ['postgres:read'],
          },
          {
            id: 'rex',
            sha256: createHash('sha256').update(KEYS.rex).digest('hex'),
            principal: REX,
            scopes: ['postgres:read'],
            claims: { team: 'sales' },
          },
        ]),
      },
    });
    const clients = await Promise.all(
      // Rex's client speaks the 2026-07-28 era, Ana's the 2025-11-25 one: one pool, both eras.
      (['ana', 'rex'] as const).map((who) =>
        connectHttp(server.url!, {
          era: who === 'rex' ? 'modern' : 'legacy',
          headers: { authorization: `Bearer ${KEYS[who]}` },
        }),
      ),
    );
    try {
      // Through a view too (security_invoker: read as the caller), which runs the identity and
      // session checks after the statement; the plain one skips them.
      await company.admin.query(
        `CREATE OR REPLACE VIEW public.customers_seen WITH (security_invoker = true) AS SELECT * FROM customers;
         GRANT SELECT ON public.customers_seen TO ${analyst}, ${rep}`,
      );
      const sql = (from: string) =>
        `SELECT current_user::text, current_setting('gatehouse.principal'), count(*)::int FROM ${from}`;
      const expected = {
        ana: (await truth(analyst, ANA, sql('customers'))) as { rows: unknown[][] },
        rex: (await truth(rep, REX, sql('customers'))) as { rows: unknown[][] },
      };
      expect(expected.ana.rows).not.toEqual(expected.rex.rows);
      const calls = Array.from({ length: 24 }, (_, i): 'ana' | 'rex' =>
        i % 2 === 0 ? 'ana' : 'rex',
      );
      const answers = await Promise.all(
        calls.map(async (who, i) => {
          const client = clients[who === 'ana' ? 0 : 1]!.client;
          const result = await client.callTool({
            name: 'postgres_query',
            arguments: { sql: sql(i % 4 < 2 ? 'customers' : 'customers_seen') },
          });
          return { who, rows: rowsOf(result) };
        }),
      );
      for (const { who, rows } of answers) {
        expect(rows, `${who}: ${JSON.stringify(rows)}`).toEqual(expected[who].rows);
      }
    } finally {
      for (const c of clients) await c.close();
      await server.stop();
    }
    const roles = server
      .auditRecords()
      .filter((r) => r.mcp?.name === 'postgres_query')
      .map((r) => `${r.user?.id} as ${r.user?.effective?.name}`);
    expect(new Set(roles)).toEqual(new Set([`${ANA} as ${analyst}`, `${REX} as ${rep}`]));
    expect(roles).toHaveLength(24);
  });

  it('over stdio, POSTGRES_ROLE: the local user reads as the role the operator configured', async () => {
    const connection = await connectStdio(process.execPath, [BIN], {
      env: {
        PATH: process.env.PATH ?? '',
        POSTGRES_URL: loginUrl,
        POSTGRES_ROLE: rep,
        GATEHOUSE_PRINCIPAL: REX,
        GATEHOUSE_STRUCTURED_OUTPUT: 'true',
      },
    });
    try {
      const result = await connection.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT DISTINCT country FROM customers ORDER BY 1' },
      });
      expect(rowsOf(result)).toEqual([['NL'], ['SE']]);
      const employees = await connection.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT count(*) FROM employees' },
      });
      expect(text(employees)).toContain('permission denied for table employees');
    } finally {
      await connection.close();
    }
  });

  it('refuses to start on a role map PostgreSQL cannot honour: exit 2, the role and the reason, in one voice', async () => {
    const bad = writeMap('bad.yaml', {
      rules: [
        { principal: 'a', role: 'no_such_role_here' },
        { principal: 'b', role: analyst },
      ],
    });
    const server = await spawnServer(process.execPath, [BIN], {
      env: {
        PATH: process.env.PATH ?? '',
        POSTGRES_URL: loginUrl,
        POSTGRES_ROLE_MAP_FILE: bad,
      },
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    const stderr = server.logs.map((l) => l.raw ?? '').join('\n');
    expect(stderr).toContain('Invalid configuration');
    expect(stderr).toContain('POSTGRES_ROLE_MAP_FILE');
    expect(stderr).toContain('mapped role "no_such_role_here" does not exist');
  });
});

describe('the start checks each mapped role and the login role', () => {
  /** What the start says of a role map over `url`, as the runner runs it. */
  async function start(
    map: unknown,
    extra: Record<string, string> = {},
  ): Promise<{ error?: string; logs: string }> {
    const file = writeMap(`start-${randomBytes(3).toString('hex')}.yaml`, map);
    const server = await connectPostgres(
      { POSTGRES_URL: loginUrl, POSTGRES_ROLE_MAP_FILE: file, ...extra },
      { verify: false },
    );
    try {
      await server.definition.startup!.check();
      return { logs: server.logs() };
    } catch (error) {
      // Each a CredentialError: the runner says it in the one "Invalid configuration" voice,
      // naming the variable (the spawned server above shows it).
      const variable = (error as { variable?: string }).variable ?? '';
      return { error: `${variable}: ${(error as Error).message}`, logs: server.logs() };
    } finally {
      await server.close();
    }
  }

  it('passes the documented set-up, and reports row-level security that reads nobody’s settings', async () => {
    const { error, logs } = await start({
      rules: [{ principal: ANA, role: analyst }],
      default: rep,
    });
    expect(error).toBeUndefined();
    expect(logs).toContain(
      'public.notes has row-level security, and none of its 1 policies reads a gatehouse setting',
    );
    expect(logs).not.toContain('public.customers has row-level security');
  });

  it('refuses a role that can write, bypasses RLS, is inherited, cannot be switched to, or a login role that reads more', async () => {
    const { admin } = company;
    const tag = randomBytes(3).toString('hex');
    const writer = `gh_${tag}_writer`;
    const bypass = `gh_${tag}_bypass`;
    const stranger = `gh_${tag}_stranger`;
    await admin.query(`
      CREATE ROLE ${writer} NOLOGIN; GRANT INSERT ON orders TO ${writer};
      CREATE ROLE ${bypass} NOLOGIN BYPASSRLS; GRANT ${bypass} TO ${login} WITH INHERIT FALSE;
      CREATE ROLE ${stranger} NOLOGIN`);
    try {
      const cases: Array<[string, RegExp]> = [
        [bypass, new RegExp(`POSTGRES_ROLE_MAP_FILE.*mapped role "${bypass}" has BYPASSRLS`, 's')],
        [
          stranger,
          new RegExp(`POSTGRES_ROLE_MAP_FILE.*cannot switch to mapped role "${stranger}"`, 's'),
        ],
      ];
      for (const [role, reason] of cases) {
        const { error } = await start({ default: role });
        expect(error, `${role}: ${error}`).toMatch(reason);
      }
      // A role that can write: the login role's own check finds it first, as it can act as it.
      await admin.query(`GRANT ${writer} TO ${login} WITH INHERIT FALSE`);
      const writes = await start({ default: writer });
      expect(writes.error).toMatch(
        new RegExp(`INSERT on public.orders \\(through role ${writer}\\)`),
      );
      // The login role's override (POSTGRES_ALLOW_PRIVILEGED_ROLE) is no override for a mapped
      // role: its own check refuses the writer still.
      const overridden = await start(
        { default: writer },
        { POSTGRES_ALLOW_PRIVILEGED_ROLE: 'true' },
      );
      expect(overridden.error).toMatch(
        new RegExp(
          `POSTGRES_ROLE_MAP_FILE.*mapped role "${writer}" can change data: INSERT on public\\.orders`,
          's',
        ),
      );
      await admin.query(`REVOKE ${writer} FROM ${login}`);
      // Inherited: the login role would read what the mapped role reads in every call.
      await admin.query(`GRANT ${analyst} TO ${login} WITH INHERIT TRUE`);
      try {
        const { error } = await start({ default: analyst });
        expect(error).toMatch(new RegExp(`inherits the privileges of mapped role "${analyst}"`));
      } finally {
        await admin.query(
          `REVOKE ${analyst} FROM ${login}; GRANT ${analyst} TO ${login} WITH INHERIT FALSE`,
        );
      }
      // The login role itself reads a table the rep may not.
      await admin.query(`GRANT SELECT ON employees TO ${login}`);
      try {
        const { error } = await start({ rules: [{ principal: ANA, role: analyst }], default: rep });
        expect(error).toMatch(
          /the login role "[^"]+" itself reads what a mapped role may not: public\.employees\.\w+ \(not "gh_\w+_rep"\)/,
        );
      } finally {
        await admin.query(`REVOKE SELECT ON employees FROM ${login}`);
      }
    } finally {
      await admin
        .query(`DROP ROLE ${writer}; DROP ROLE ${bypass}; DROP ROLE ${stranger}`)
        .catch(async () => {
          await admin.query(`REVOKE ALL ON orders FROM ${writer}`);
          await admin.query(`DROP ROLE ${writer}; DROP ROLE ${bypass}; DROP ROLE ${stranger}`);
        });
    }
  });
});

describe('non-interference, a third axis: two callers in two roles over one database', () => {
  let servers: Record<'ana' | 'rex', PostgresHarness>;
  beforeAll(async () => {
    const quiet = { GATEHOUSE_STRUCTURED_OUTPUT: 'false' };
    servers = {
      ana: await connectPostgres(env(quiet), { principal: CALLERS.ana() }),
      rex: await connectPostgres(env(quiet), { principal: CALLERS.rex() }),
    };
  });
  afterAll(async () => {
    await servers?.ana.close();
    await servers?.rex.close();
  });

  it(
    'answers differ only where PostgreSQL answers the two roles differently',
    { timeout: 300_000 },
    async () => {
      const calls = ROADS.flatMap((road) => SINKS.map((sink) => sink.build(road))).filter(
        (c) => c.tool === 'postgres_query',
      );
      const normalise = (s: string) =>
        s
          .replace(/ in [\d.]+ ms/g, ' in X ms')
          .replace(/untrusted-data-[0-9a-f]+/g, 'untrusted-data-N')
          .replace(/incident [0-9a-f-]+/g, 'incident X');
      const unexplained: string[] = [];
      let differing = 0;
      let refusedAlike = 0;
      for (let i = 0; i < calls.length; i += 4) {
        await Promise.all(
          calls.slice(i, i + 4).map(async ({ sql }) => {
            const [a, r] = await Promise.all(
              (['ana', 'rex'] as const).map(async (who) => {
                const result = await servers[who].client.callTool({
                  name: 'postgres_query',
                  arguments: { sql },
                });
                return { isError: result.isError === true, text: normalise(text(result)) };
              }),
            );
            if (a!.isError === r!.isError && a!.text === r!.text) {
              if (a!.isError && /Refused by the read-only SQL policy/.test(a!.text)) refusedAlike++;
              return;
            }
            differing++;
            // The rules never depend on who asks: a refusal for one is a refusal for both.
            const policy = /Refused by the read-only SQL policy/;
            if (policy.test(a!.text) || policy.test(r!.text)) {
              unexplained.push(
                `${sql}\n  ana: ${a!.text.slice(0, 200)}\n  rex: ${r!.text.slice(0, 200)}`,
              );
              return;
            }
            const [ta, tr] = [await truth(analyst, ANA, sql), await truth(rep, REX, sql)];
            if (JSON.stringify(ta) === JSON.stringify(tr)) {
              unexplained.push(
                `${sql}\n  PostgreSQL answers both roles alike, the server does not`,
              );
            }
          }),
        );
      }
      console.log(
        `non-interference (two roles): ${calls.length} statements; ${differing} answered differently, each as PostgreSQL does; ${refusedAlike} refused alike`,
      );
      expect(unexplained, unexplained.slice(0, 5).join('\n')).toEqual([]);
      // The oracle has differences to explain: the roles' privileges and row-level security.
      expect(differing).toBeGreaterThan(10);
    },
  );
});
