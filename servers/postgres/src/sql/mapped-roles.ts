import { ToolError } from '@gatehouse/core';
import pg from 'pg';
import type { ClientBase } from 'pg';
import type { RoleMap } from '../role-map.js';
import { USER_NAMESPACES, definerFindings, roleFindings } from './role-check.js';

/**
 * The start's check of a role map (ADR 0027), once, on the login role's connection: each mapped
 * role exists, the login role can switch to it without inheriting what it reads, and it passes
 * the read-only role check with no BYPASSRLS; the login role reads nothing some mapped role could
 * not. Tables whose row-level security reads nobody's settings are reported, not refused.
 */
export interface MappedRolesReport {
  /** The mapped roles, in the map's order. */
  readonly roles: readonly string[];
  /** Each a reason to refuse the start, naming the role. */
  readonly problems: readonly string[];
  /** Worth a warning: RLS tables whose policies read no gatehouse setting. */
  readonly warnings: readonly string[];
}

/** The start refused for a mapped role (converted to the one "Invalid configuration" voice). */
export class MappedRoleError extends ToolError {
  readonly report: MappedRolesReport;
  constructor(report: MappedRolesReport) {
    super(
      `Refusing to serve: ${report.problems.join('; ')}. See servers/postgres/README.md, "A role per caller".`,
      { code: 'mapped_role' },
    );
    this.report = report;
  }
}

const LIMIT = 5;

/** Runs the check with `client`, connected as the login role `login`. */
export async function checkMappedRoles(
  client: ClientBase,
  login: string,
  map: RoleMap,
  schemas: readonly string[],
): Promise<MappedRolesReport> {
  const roles = map.roles;
  const problems: string[] = [];
  const warnings: string[] = [];

  // PostgreSQL 16 split membership into SET and INHERIT; before it, a member may always SET ROLE.
  const version = await client.query<{ v: number }>(
    `SELECT pg_catalog.current_setting('server_version_num')::int AS v`,
  );
  const setMode = (version.rows[0]?.v ?? 0) >= 160000 ? 'SET' : 'MEMBER';
  const found = await client.query<{
    role: string;
    exists: boolean;
    can_set: boolean | null;
    inherits: boolean | null;
    bypassrls: string[] | null;
  }>(
    `SELECT r AS role, x.oid IS NOT NULL AS exists,
            CASE WHEN x.oid IS NOT NULL THEN pg_catalog.pg_has_role($1::name, x.oid, '${setMode}') END AS can_set,
            CASE WHEN x.oid IS NOT NULL THEN pg_catalog.pg_has_role($1::name, x.oid, 'USAGE') END AS inherits,
            CASE WHEN x.oid IS NOT NULL THEN ARRAY(
              SELECT b.rolname::text FROM pg_catalog.pg_roles b
              WHERE b.rolbypassrls AND pg_catalog.pg_has_role(x.oid, b.oid, 'MEMBER') ORDER BY 1) END AS bypassrls
     FROM unnest($2::text[]) r LEFT JOIN pg_catalog.pg_roles x ON x.rolname = r`,
    [login, roles],
  );
  for (const r of found.rows) {
    const who = `mapped role "${r.role}"`;
    if (!r.exists) {
      problems.push(
        `${who} does not exist in the database (names are as the catalog stores them, usually lower case)`,
      );
      continue;
    }
    if (r.role === login) continue; // the login role itself: nothing to switch to
    if (r.can_set !== true) {
      problems.push(
        `the login role "${login}" cannot switch to ${who} (run: GRANT ${pg.escapeIdentifier(r.role)} TO ${pg.escapeIdentifier(login)} WITH INHERIT FALSE;)`,
      );
    }
    if (r.inherits === true) {
      problems.push(
        `the login role "${login}" inherits the privileges of ${who}, so it reads what "${r.role}" reads outside that role's calls (grant the membership WITH INHERIT FALSE on PostgreSQL 16+, or ALTER ROLE ${pg.escapeIdentifier(login)} NOINHERIT)`,
      );
    }
    if (r.bypassrls !== null && r.bypassrls.length > 0) {
      const via = r.bypassrls.filter((b) => b !== r.role);
      problems.push(
        `${who} has BYPASSRLS${via.length > 0 ? ` (through ${via.join(', ')})` : ''}: row-level security would not apply to its calls`,
      );
    }
    const { findings } = await roleFindings(client, r.role);
    findings.push(...(await definerFindings(client, r.role)));
    if (findings.length > 0) {
      const shown = findings
        .slice(0, LIMIT)
        .map((f) => `${f.detail}${f.role === r.role ? '' : ` (through role ${f.role})`}`);
      problems.push(
        `${who} can change data: ${shown.join(', ')}${findings.length > LIMIT ? ` and ${findings.length - LIMIT} more` : ''}`,
      );
    }
  }

  // What the login role reads, column by column, that a mapped role may not: the server's own
  // calls run as it, and it must read nothing beyond what every mapped role does.
  const existing = found.rows.filter((r) => r.exists && r.role !== login).map((r) => r.role);
  if (existing.length > 0) {
    const beyond = await client.query<{ object: string; role: string }>(
      `SELECT pg_catalog.format('%I.%I.%I', n.nspname, c.relname, a.attname) AS object, r AS role
       FROM pg_catalog.pg_class c
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       CROSS JOIN unnest($2::text[]) r
       WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relnamespace IN (${USER_NAMESPACES})
         AND pg_catalog.has_column_privilege($1::name, c.oid, a.attnum, 'SELECT')
         AND NOT pg_catalog.has_column_privilege(r::name, c.oid, a.attnum, 'SELECT')
       ORDER BY 1, 2
       LIMIT ${LIMIT + 1}`,
      [login, existing],
    );
    if (beyond.rows.length > 0) {
      const shown = beyond.rows.slice(0, LIMIT).map((b) => `${b.object} (not "${b.role}")`);
      problems.push(
        `the login role "${login}" itself reads what a mapped role may not: ${shown.join(', ')}${beyond.rows.length > LIMIT ? ' and more' : ''} (revoke its own grants: it needs only CONNECT, USAGE on the schemas and membership in the mapped roles)`,
      );
    }
  }

  // Row-level security that reads nobody's settings: its rows do not depend on who is asking.
  const blind = await client.query<{ object: string; policies: number }>(
    `SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) AS object,
            (SELECT count(*)::int FROM pg_catalog.pg_policy p WHERE p.polrelid = c.oid) AS policies
     FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relrowsecurity AND n.nspname = ANY($1::text[])
       AND NOT EXISTS (
         SELECT 1 FROM pg_catalog.pg_policy p WHERE p.polrelid = c.oid
           AND (coalesce(pg_catalog.pg_get_expr(p.polqual, p.polrelid), '') ||
                coalesce(pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid), '')) LIKE '%gatehouse.%')
     ORDER BY 1`,
    [schemas],
  );
  for (const b of blind.rows) {
    warnings.push(
      b.policies === 0
        ? `${b.object} has row-level security and no policy: no mapped role reads any of its rows`
        : `${b.object} has row-level security, and none of its ${b.policies} policies reads a gatehouse setting (gatehouse.principal, gatehouse.claim.*): its rows do not depend on who is asking, only on the role`,
    );
  }
  return { roles, problems, warnings };
}
