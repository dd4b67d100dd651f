import { mkdtempSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main as auditMain } from '@gatehouse/audit';
import { loadConfig } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import { checkAtStart, createLogger } from '@gatehouse/core/runtime';
import { spawnServer } from '@gatehouse/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkRole } from '../src/sql/role-check.ts';
import { PostgresConfigSchema } from '../src/config.ts';
import type { PostgresConfig } from '../src/config.ts';
import { createPostgresServer } from '../src/server.ts';
import { companyDatabase } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

// Layer 1 on its own: the startup role check against real roles and grants.

/** Runs gatehouse-audit in process. */
async function auditCli(argv: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      out += chunk.toString();
      done();
    },
  });
  return { code: await auditMain(argv, sink, sink), out };
}

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
let company: CompanyDatabase;

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'roles');
});
afterAll(async () => {
  await company?.close();
});

async function findings(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await checkRole(client)).findings.map((f) => `${f.kind}: ${f.detail} [${f.role}]`);
  } finally {
    await client.end();
  }
}

/** The server as runServer starts it: the definition, then the core's start-up check. */
async function startPostgresServer(
  config: PostgresConfig,
  deps: { logger: Logger },
): Promise<ReturnType<typeof createPostgresServer>> {
  const server = createPostgresServer(config, deps);
  await checkAtStart(server, deps.logger);
  return server;
}

describe('the role check', () => {
  it('passes the role created with the documented SQL', async () => {
    expect(await findings(company.url)).toEqual([]);
  });

  it('refuses a superuser', async () => {
    expect(await findings(company.db.url)).toContainEqual(
      expect.stringMatching(/^superuser: is a superuser/),
    );
  });

  it.each([
    [
      'a table owner',
      (r: string) =>
        `CREATE TABLE public.mine_${r} (x int); ALTER TABLE public.mine_${r} OWNER TO ${r}`,
      /^owner: owns relation public\.mine_/,
    ],
    [
      'INSERT on a table',
      (r: string) => `GRANT SELECT, INSERT ON public.orders TO ${r}`,
      /^privilege: INSERT on public\.orders/,
    ],
    [
      'UPDATE on one column',
      (r: string) => `GRANT UPDATE (status) ON public.orders TO ${r}`,
      /^privilege: UPDATE on public\.orders/,
    ],
    [
      'DELETE',
      (r: string) => `GRANT DELETE ON public.order_items TO ${r}`,
      /^privilege: DELETE on public\.order_items/,
    ],
    [
      'TRUNCATE',
      (r: string) => `GRANT TRUNCATE ON public.customers TO ${r}`,
      /^privilege: TRUNCATE on public\.customers/,
    ],
    [
      'REFERENCES',
      (r: string) => `GRANT REFERENCES ON public.customers TO ${r}`,
      /^privilege: REFERENCES on public\.customers/,
    ],
    [
      'TRIGGER',
      (r: string) => `GRANT TRIGGER ON public.customers TO ${r}`,
      /^privilege: TRIGGER on public\.customers/,
    ],
    [
      'CREATE on a schema',
      (r: string) => `GRANT CREATE ON SCHEMA hr TO ${r}`,
      /^schema_create: CREATE on schema hr/,
    ],
    [
      'CREATE on the database',
      (r: string) => `GRANT CREATE ON DATABASE "${company.db.name}" TO ${r}`,
      /^database_create: CREATE on database/,
    ],
    [
      'USAGE on a sequence',
      (r: string) => `GRANT USAGE ON SEQUENCE public.orders_id_seq TO ${r}`,
      /^sequence: USAGE\/UPDATE on sequence public\.orders_id_seq/,
    ],
    ['CREATEDB', (r: string) => `ALTER ROLE ${r} CREATEDB`, /^attribute: has CREATEDB/],
    [
      'pg_write_all_data',
      (r: string) => `GRANT pg_write_all_data TO ${r}`,
      /^predefined_role: is a member of pg_write_all_data/,
    ],
  ])('refuses %s', async (_what, grant, expected) => {
    const { url } = await company.createRole(grant);
    expect(await findings(url)).toContainEqual(expect.stringMatching(expected));
  });

  it('refuses a SECURITY DEFINER function it can execute whose owner can write, naming the REVOKE', async () => {
    // EXECUTE goes to PUBLIC by default: the documented role can run it, with the owner's rights.
    await company.admin.query(`
      CREATE FUNCTION public.definer_shell() RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
        AS $$ BEGIN COPY (SELECT 1) TO PROGRAM 'true'; RETURN 1; END $$`);
    try {
      const found = await findings(company.url);
      expect(found).toContainEqual(
        `security_definer: EXECUTE on SECURITY DEFINER function public.definer_shell(), owned by postgres, who can write (run: REVOKE EXECUTE ON FUNCTION public.definer_shell() FROM PUBLIC;) [${company.role}]`,
      );
      // The REVOKE it names closes it.
      await company.admin.query('REVOKE EXECUTE ON FUNCTION public.definer_shell() FROM PUBLIC');
      expect(await findings(company.url)).toEqual([]);
      // A direct grant is named too.
      await company.admin.query(
        `GRANT EXECUTE ON FUNCTION public.definer_shell() TO ${company.role}`,
      );
      expect(await findings(company.url)).toContainEqual(
        expect.stringContaining(`FROM ${company.role};)`),
      );
    } finally {
      await company.admin.query('DROP FUNCTION public.definer_shell()');
    }
  });

  it('passes a SECURITY DEFINER function whose owner cannot write', async () => {
    const owner = await company.createRole((r) => `GRANT SELECT ON public.products TO ${r}`);
    await company.admin.query(`
      CREATE FUNCTION public.price_of(int) RETURNS numeric LANGUAGE sql STABLE SECURITY DEFINER
        AS 'SELECT price FROM public.products WHERE id = $1';
      ALTER FUNCTION public.price_of(int) OWNER TO ${owner.role}`);
    try {
      expect(await findings(company.url)).toEqual([]);
    } finally {
      await company.admin.query('DROP FUNCTION public.price_of(int)');
    }
  });

  it('refuses a role that can SET ROLE to a writer, naming the writer', async () => {
    const writer = await company.createRole((r) => `GRANT INSERT ON public.orders TO ${r}`);
    const { url } = await company.createRole(
      (r) => `GRANT ${writer.role} TO ${r} WITH INHERIT FALSE, SET TRUE`,
    );
    expect(await findings(url)).toContainEqual(
      `privilege: INSERT on public.orders [${writer.role}]`,
    );
  });
});

describe('starting the server', () => {
  const logger = createLogger({ level: 'silent' });

  it('refuses to start as a privileged role, with the findings under POSTGRES_URL', async () => {
    const config = loadConfig(PostgresConfigSchema, { POSTGRES_URL: company.db.url });
    await expect(startPostgresServer(config, { logger })).rejects.toMatchObject({
      name: 'ConfigError',
      message: expect.stringMatching(
        /POSTGRES_URL: Refusing to serve: role "postgres".*is a superuser/,
      ),
    });
  });

  it('exits with code 2 and a readable message that holds no secret', async () => {
    const password = new URL(company.db.url).password;
    const server = await spawnServer(process.execPath, [BIN], {
      env: { POSTGRES_URL: company.db.url, PATH: process.env.PATH ?? '' },
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    const stderr = server.logs.map((l) => JSON.stringify(l)).join('\n');
    expect(stderr).toContain('POSTGRES_ALLOW_PRIVILEGED_ROLE');
    expect(stderr).toContain('is a superuser');
    expect(stderr).not.toContain(password);
  });

  it.each([
    ['a role that can write', () => company.db.url, 2, /Refusing to serve: role "postgres"/],
    [
      'a wrong password',
      () => {
        const url = new URL(company.url);
        url.password = 'not-the-password';
        return url.toString();
      },
      2,
      /^POSTGRES_URL: PostgreSQL refused the server's login \(28P01\): password authentication failed/,
    ],
  ])(
    'a refused start (%s) is in the audit trail, and the trail verifies',
    async (_n, url, code, reason) => {
      const dir = mkdtempSync(join(tmpdir(), 'refused-'));
      const auditFile = join(dir, 'audit.jsonl');
      const server = await spawnServer(process.execPath, [BIN], {
        env: {
          POSTGRES_URL: url(),
          GATEHOUSE_AUDIT_SINKS: 'file',
          GATEHOUSE_AUDIT_FILE: auditFile,
          PATH: process.env.PATH ?? '',
        },
        waitForStart: false,
      });
      expect(await server.exited()).toBe(code);
      const records = readFileSync(auditFile, 'utf8')
        .trim()
        .split('\n')
        .map(
          (l) =>
            JSON.parse(l) as {
              event: { action: string; reason: string };
              gatehouse?: { reason?: string; exit_code?: number };
            },
        );
      expect(records.map((r) => r.event.action)).toEqual([
        'gatehouse/start_refused',
        'audit/checkpoint',
      ]);
      expect(records[0]!.event.reason).toBe('start_refused');
      expect(records[0]!.gatehouse).toMatchObject({
        reason: expect.stringMatching(reason),
        exit_code: code,
      });
      expect(readFileSync(auditFile, 'utf8')).not.toContain('not-the-password');
      expect(readFileSync(auditFile, 'utf8')).not.toContain(new URL(company.db.url).password);
      const verified = await auditCli(['verify', auditFile]);
      expect(verified.code).toBe(0);
    },
  );

  it.each([
    ['an unencoded / in the password', 'p/ss'],
    ['an unencoded # in the password', 'p#ss'],
    ['an unencoded ? in the password', '12?34'],
  ])(
    'refuses POSTGRES_URL with %s before connecting: exit 2, named, never echoed',
    async (_n, password) => {
      const url = company.url.replace(/:[^:@/]+@/, `:${password}@`);
      const server = await spawnServer(process.execPath, [BIN], {
        env: { POSTGRES_URL: url, PATH: process.env.PATH ?? '' },
        waitForStart: false,
      });
      expect(await server.exited()).toBe(2);
      const stderr = server.logs.map((l) => JSON.stringify(l)).join('\n');
      expect(stderr).toContain('POSTGRES_URL:');
      expect(stderr).toContain('percent-encode');
      expect(stderr).not.toContain(password);
      expect(stderr).not.toContain(url);
    },
  );

  it('says every start-up refusal in one voice: one block, exit 2, every problem at once', async () => {
    // A wrong password (found only by connecting), then configuration problems of the core and of
    // the server together: each is one "Invalid configuration" block, never a stack trace.
    const wrong = new URL(company.url);
    wrong.password = 'not-the-password';
    const refused = await spawnServer(process.execPath, [BIN], {
      env: { POSTGRES_URL: wrong.toString(), PATH: process.env.PATH ?? '' },
      waitForStart: false,
    });
    expect(await refused.exited()).toBe(2);
    const raw = refused.logs.flatMap((l) => (typeof l.raw === 'string' ? [l.raw] : []));
    expect(raw).toEqual([
      'Invalid configuration:',
      expect.stringMatching(
        /^ {2}- POSTGRES_URL: PostgreSQL refused the server's login \(28P01\): password authentication failed for user "/,
      ),
    ]);
    const lines = refused.logs.map((l) => JSON.stringify(l)).join('\n');
    expect(lines).not.toMatch(/"stack"|at [\w.]+ \(/);
    expect(lines).not.toContain('not-the-password');

    const many = await spawnServer(process.execPath, [BIN], {
      env: {
        POSTGRES_URI: company.url,
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_HOST: '0.0.0.0',
        GATEHOUSE_AUTH: 'api_key',
        GATEHOUSE_API_KEYS: 'REPLACE-ME',
        PATH: process.env.PATH ?? '',
      },
      waitForStart: false,
    });
    expect(await many.exited()).toBe(2);
    const block = many.logs.flatMap((l) => (typeof l.raw === 'string' ? [l.raw] : []));
    expect(block).toEqual([
      'Invalid configuration:',
      '  - GATEHOUSE_API_KEYS: still a placeholder from an example (REPLACE-ME or similar): set the real value',
      '  - POSTGRES_URL: required (set POSTGRES_URL or POSTGRES_URL_FILE); POSTGRES_URI is set: did you mean POSTGRES_URL?',
      '  - GATEHOUSE_ALLOWED_HOSTS: required when GATEHOUSE_HOST (0.0.0.0) is not a loopback address (DNS-rebinding protection)',
    ]);
    expect(JSON.stringify(many.logs)).not.toContain(new URL(company.url).password);
  });

  it('warns about misspelled variables and schemas that do not exist', async () => {
    const server = await spawnServer(process.execPath, [BIN], {
      env: {
        POSTGRES_URL: company.url,
        POSTGRES_SCHEMAS: 'public,pubilc',
        POSTGRES_MASK_COLUMN: '*.email',
        GATEHOUSE_TRANSPROT: 'http',
        PATH: process.env.PATH ?? '',
      },
    });
    try {
      await server.waitForLog((l) => l.msg === 'server started');
      const warnings = server.logs.filter((l) => l.level === 'warn').map((l) => l.msg);
      expect(warnings).toContain(
        'unknown variable POSTGRES_MASK_COLUMN is ignored: did you mean POSTGRES_MASK_COLUMNS?',
      );
      expect(warnings).toContain(
        'unknown variable GATEHOUSE_TRANSPROT is ignored: did you mean GATEHOUSE_TRANSPORT?',
      );
      expect(warnings).toContain(
        `POSTGRES_SCHEMAS: schema "pubilc" does not exist in database "${company.db.name}" (a typo?)`,
      );
    } finally {
      server.child.stdin?.end();
      await server.stop();
    }
  });

  it('starts anyway with the override, warning loudly and writing an audit record', async () => {
    const password = new URL(company.db.url).password;
    const server = await spawnServer(process.execPath, [BIN], {
      env: {
        POSTGRES_URL: company.db.url,
        POSTGRES_ALLOW_PRIVILEGED_ROLE: 'true',
        PATH: process.env.PATH ?? '',
      },
    });
    try {
      const warning = await server.waitForLog((l) => /SECURITY CHECK OVERRIDDEN/.test(l.msg ?? ''));
      expect(warning).toMatchObject({ level: 'warn', setting: 'POSTGRES_ALLOW_PRIVILEGED_ROLE' });
      const override = server
        .auditRecords()
        .find((r) => r.event.action === 'gatehouse/security_override');
      expect(override).toMatchObject({
        event: { reason: 'security_override', category: ['configuration'] },
        gatehouse: {
          setting: 'POSTGRES_ALLOW_PRIVILEGED_ROLE',
          role: 'postgres',
          findings: expect.arrayContaining([expect.objectContaining({ kind: 'superuser' })]),
        },
      });
      expect(JSON.stringify(server.logs)).not.toContain(password);
    } finally {
      server.child.stdin?.end();
      await server.stop();
    }
  });

  it('sets default_transaction_read_only on every session as well', async () => {
    const config = loadConfig(PostgresConfigSchema, { POSTGRES_URL: company.url });
    const definition = await startPostgresServer(config, { logger });
    const { db } = definition;
    try {
      const settings = await db.transaction(
        { signal: new AbortController().signal, deadline: Date.now() + 5_000, principal: null },
        async (client) =>
          (
            await client.query<{ d: string; t: string }>(
              "SELECT current_setting('default_transaction_read_only') AS d, current_setting('transaction_read_only') AS t",
            )
          ).rows[0],
      );
      expect(settings).toEqual({ d: 'on', t: 'on' });
    } finally {
      await definition.close?.();
    }
  });
});
