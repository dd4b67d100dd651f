import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadConfig } from '@gatehouse/core';
import { createTestHarness } from '@gatehouse/core/testing';
import type { Logger, Principal } from '@gatehouse/core';
import type { AuditRecord } from '@gatehouse/audit';
import { connectInMemory } from '@gatehouse/testkit';
import type { Connection, Era } from '@gatehouse/testkit';
import { freshDatabase } from '@gatehouse/testkit/postgres';
import type { TestDatabase } from '@gatehouse/testkit/postgres';
import pg from 'pg';
import { PostgresConfigSchema } from '../src/config.ts';
import type { PostgresConfig } from '../src/config.ts';
import { createPostgresServer } from '../src/server.ts';

export const COMPANY_SQL = readFileSync(new URL('../demo/company.sql', import.meta.url), 'utf8');
export const ROLE_SQL = readFileSync(new URL('../demo/readonly-role.sql', import.meta.url), 'utf8');
const MASKING_SQL = readFileSync(new URL('./fixtures/masking.sql', import.meta.url), 'utf8');

/** POSTGRES_MASK_COLUMNS for a database with the masking fixture (test/fixtures/masking.sql). */
export const FIXTURE_MASKS =
  '*.email,employees.national_id,payroll.ssn,people.badge,tokens.token,notes.secret,identities.national_id';

/** Adds the masking fixture's roads to masked values and hidden objects to a company database. */
export async function addMaskingFixture(company: CompanyDatabase): Promise<void> {
  await company.admin.query(MASKING_SQL.replaceAll(':role', company.role));
}

/** A seeded company database with a read-only role, and a privileged connection to it. */
export interface CompanyDatabase {
  readonly db: TestDatabase;
  /** Superuser (owner) connection — the "separate privileged connection" of the checks. */
  readonly admin: pg.Client;
  /** The read-only role's name and URL, created with demo/readonly-role.sql. */
  readonly role: string;
  readonly url: string;
  /** A fingerprint of all data and schema; equal before and after means nothing changed. */
  checksum(): Promise<string>;
  /** Advisory locks held by sessions in this database (a session lock outlives ROLLBACK). */
  advisoryLocks(): Promise<number>;
  /** Creates another login role (for role-check tests) and returns its URL. */
  createRole(sql: (role: string) => string): Promise<{ role: string; url: string }>;
  close(): Promise<void>;
}

function roleUrl(base: string, role: string, password: string): string {
  const url = new URL(base);
  url.username = role;
  url.password = password;
  return url.toString();
}

/** Creates a company database (demo/company.sql) and the documented read-only role. */
export async function companyDatabase(adminUrl: string, prefix: string): Promise<CompanyDatabase> {
  const db = await freshDatabase(adminUrl, prefix);
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  await admin.query(COMPANY_SQL);
  const roles: string[] = [];
  const createRole = async (sql: (role: string) => string) => {
    const role = `gh_${randomBytes(5).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
    roles.push(role);
    await admin.query(sql(role));
    return { role, url: roleUrl(db.url, role, password) };
  };
  const documented = await createRole((role) =>
    ROLE_SQL.replace(/^CREATE ROLE[^;]*;/m, '')
      .replaceAll('gatehouse_ro', role)
      .replaceAll('"company"', `"${db.name}"`),
  );
  return {
    db,
    admin,
    role: documented.role,
    url: documented.url,
    createRole,
    async advisoryLocks() {
      const held = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND a.datname = current_database()`,
      );
      return held.rows[0]!.n;
    },
    async checksum() {
      const tables = await admin.query<{ name: string }>(
        `SELECT format('%I.%I', n.nspname, c.relname) AS name
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
           AND n.nspname NOT LIKE 'pg\\_%'
         ORDER BY 1`,
      );
      const parts: string[] = [];
      for (const { name } of tables.rows) {
        const sum = await admin.query<{ sum: string | null }>(
          `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS sum FROM ${name} t`,
        );
        parts.push(`${name}=${sum.rows[0]!.sum ?? 'empty'}`);
      }
      // Schema objects, sequences, large objects, roles and prepared transactions too.
      const catalog = await admin.query<{ sum: string }>(
        `SELECT md5(concat_ws('|',
           (SELECT string_agg(format('%s.%s:%s', n.nspname, c.relname, c.relkind), ',' ORDER BY 1)
              FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')),
           (SELECT string_agg(format('%s:%s', p.oid::regprocedure, md5(p.prosrc)), ',' ORDER BY 1)
              FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')),
           (SELECT string_agg(format('%s:%s', schemaname || '.' || sequencename, last_value), ',' ORDER BY 1)
              FROM pg_sequences),
           (SELECT count(*) FROM pg_largeobject_metadata),
           (SELECT string_agg(rolname, ',' ORDER BY 1) FROM pg_roles),
           (SELECT count(*) FROM pg_prepared_xacts),
           (SELECT string_agg(collname, ',' ORDER BY 1) FROM pg_collation)
         )) AS sum`,
      );
      parts.push(`catalog=${catalog.rows[0]!.sum}`);
      return parts.join('\n');
    },
    async close() {
      await admin.end();
      await db.drop();
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      for (const role of roles) await cleanup.query(`DROP ROLE IF EXISTS ${role}`);
      await cleanup.end();
    },
  };
}

/** A server connected to a real MCP client in memory, with its audit records and log. */
export interface PostgresHarness extends Connection {
  readonly config: PostgresConfig;
  readonly records: AuditRecord[];
  readonly logs: () => string;
  readonly logger: Logger;
  readonly definition: ReturnType<typeof createPostgresServer>;
}

/** Starts the Postgres server (role check included) and connects a client in memory. */
export async function connectPostgres(
  env: Record<string, string>,
  options: { era?: Era; verify?: boolean; principal?: Principal; startup?: boolean } = {},
): Promise<PostgresHarness> {
  const config = loadConfig(PostgresConfigSchema, {
    GATEHOUSE_PRINCIPAL: 'tester',
    // The suites read answers' structured content (off by default: ADR 0014).
    GATEHOUSE_STRUCTURED_OUTPUT: 'true',
    GATEHOUSE_RATE_READ_PER_MIN: '100000',
    ...env,
  });
  const harness = createTestHarness(config);
  const { logger } = harness;
  const definition = createPostgresServer(config, { logger });
  // The start-up check as the runner runs it (role check, curated queries), or the role check.
  if (options.startup === true) await definition.startup!.check();
  else if (options.verify !== false) await definition.db.verify();
  const principal = options.principal;
  const factory = harness.factory(
    definition,
    principal === undefined ? {} : { principal: () => principal },
  );
  const connection = await connectInMemory(factory, {
    era: options.era ?? 'legacy',
  });
  return {
    ...connection,
    config,
    records: harness.records,
    logger,
    definition,
    logs: harness.logs,
    async close() {
      await connection.close();
      await definition.db.close();
    },
  };
}

/** The text of a tool result, as the model reads it. */
export { resultText as text } from '@gatehouse/testkit';
