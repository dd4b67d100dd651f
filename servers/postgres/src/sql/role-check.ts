import { PolicyError, ToolError } from '@gatehouse/core';
import type { ClientBase } from 'pg';

/**
 * Layer 1 of the read-only guarantee: the role itself must not be able to write. Checked at
 * startup against the catalog, for the configured role and every role whose privileges it
 * inherits or can `SET ROLE` to.
 */

/** One reason the role is too powerful. */
export interface RoleFinding {
  /** `superuser`, `attribute`, `predefined_role`, `owner`, `privilege`, `schema_create`, `database_create`, `sequence`, `security_definer`. */
  readonly kind: string;
  /** The role that holds it (the configured role or one it can act as). */
  readonly role: string;
  /** What, in words: `INSERT on public.orders`. */
  readonly detail: string;
}

/** The outcome of the check. */
export interface RoleReport {
  readonly role: string;
  readonly database: string;
  readonly findings: readonly RoleFinding[];
  /** Facts worth a warning that do not make the role writable (BYPASSRLS). */
  readonly warnings: readonly string[];
}

/** Predefined roles that grant writes, server file access or control of other sessions. */
const WRITING_PREDEFINED_ROLES = [
  'pg_write_all_data',
  'pg_write_server_files',
  'pg_execute_server_program',
  'pg_signal_backend',
  'pg_checkpoint',
  'pg_maintain',
  'pg_create_subscription',
  'pg_signal_autovacuum_worker',
];

const TABLE_PRIVILEGES = ['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'];

// The roles whose privileges the role $1 can use: itself and every role it is a member of,
// directly or not — whether it inherits their privileges or must SET ROLE first. MEMBER also
// counts a PostgreSQL 16 grant WITH INHERIT FALSE, SET FALSE, which over-reports on the safe
// side and works on every supported version.
const ACTING_ROLES = `
  SELECT r.oid, r.rolname FROM pg_catalog.pg_roles r
  WHERE pg_catalog.pg_has_role($1::name, r.oid, 'MEMBER')`;

/** The schemas a role's objects can be in: all but the system's and temporary ones. */
export const USER_NAMESPACES = `
  SELECT n.oid FROM pg_catalog.pg_namespace n
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
    AND n.nspname NOT LIKE 'pg\\_temp\\_%' AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%'`;

const LIMIT = 50;

// schema.name of pg_class row c, whatever the search_path.
const QUALIFIED = `pg_catalog.format('%I.%I', (SELECT nspname FROM pg_catalog.pg_namespace WHERE oid = c.relnamespace), c.relname)`;

/** Runs the check with `client` (connected as the configured role). */
export async function checkRole(client: ClientBase): Promise<RoleReport> {
  const who = await client.query<{ role: string; database: string }>(
    'SELECT current_user AS role, current_database() AS database',
  );
  const { role, database } = who.rows[0]!;
  const { findings, warnings } = await roleFindings(client, role);
  findings.push(...(await definerFindings(client, role)));
  return { role, database, findings, warnings };
}

/**
 * SECURITY DEFINER functions the role can execute (EXECUTE is granted to PUBLIC by default)
 * whose owner can write: calling one runs its body with the owner's rights — a COPY … TO
 * PROGRAM, a write — whatever the caller may do and whatever its volatility label says. Each is
 * a finding with the REVOKE that closes it.
 */
export async function definerFindings(client: ClientBase, role: string): Promise<RoleFinding[]> {
  const definers = await client.query<{
    fn: string;
    owner: string;
    superuser: boolean;
    grantees: string[];
  }>(
    `SELECT pg_catalog.format('%I.%I(%s)', (SELECT nspname FROM pg_catalog.pg_namespace WHERE oid = p.pronamespace),
                              p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid)) AS fn,
            pg_catalog.pg_get_userbyid(p.proowner) AS owner,
            (SELECT rolsuper FROM pg_catalog.pg_roles WHERE oid = p.proowner) AS superuser,
            ARRAY(SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END
                  FROM pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
                  WHERE a.privilege_type = 'EXECUTE'
                    AND (a.grantee = 0 OR pg_catalog.pg_has_role($1::name, a.grantee, 'MEMBER'))
                  ORDER BY 1) AS grantees
     FROM pg_catalog.pg_proc p
     WHERE p.prosecdef AND p.pronamespace IN (${USER_NAMESPACES})
       AND p.proowner <> (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1::name)
       AND pg_catalog.has_function_privilege($1::name, p.oid, 'EXECUTE')
     ORDER BY 1
     LIMIT ${LIMIT}`,
    [role],
  );
  const owners = new Map<string, boolean>();
  const found: RoleFinding[] = [];
  for (const d of definers.rows) {
    if (!owners.has(d.owner)) {
      // What the owner can do through the function, ownership of its own functions aside.
      const owner = d.superuser ? undefined : await roleFindings(client, d.owner);
      owners.set(
        d.owner,
        owner === undefined ||
          owner.findings.some((f) => !(f.kind === 'owner' && f.detail.startsWith('owns function'))),
      );
    }
    if (!owners.get(d.owner)) continue;
    found.push({
      kind: 'security_definer',
      role,
      detail: `EXECUTE on SECURITY DEFINER function ${d.fn}, owned by ${d.owner}, who can write (run: REVOKE EXECUTE ON FUNCTION ${d.fn} FROM ${d.grantees.join(', ')};)`,
    });
  }
  return found;
}

/** What the role `role` (and every role it can act as) can change. */
export async function roleFindings(
  client: ClientBase,
  role: string,
): Promise<{ findings: RoleFinding[]; warnings: string[] }> {
  const findings: RoleFinding[] = [];
  const warnings: string[] = [];

  const attributes = await client.query<{
    rolname: string;
    rolsuper: boolean;
    rolcreaterole: boolean;
    rolcreatedb: boolean;
    rolreplication: boolean;
    rolbypassrls: boolean;
  }>(
    `SELECT r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls
     FROM pg_catalog.pg_roles r JOIN (${ACTING_ROLES}) a ON a.oid = r.oid ORDER BY r.rolname`,
    [role],
  );
  for (const r of attributes.rows) {
    if (r.rolsuper) findings.push({ kind: 'superuser', role: r.rolname, detail: 'is a superuser' });
    if (r.rolcreaterole)
      findings.push({ kind: 'attribute', role: r.rolname, detail: 'has CREATEROLE' });
    if (r.rolcreatedb)
      findings.push({ kind: 'attribute', role: r.rolname, detail: 'has CREATEDB' });
    if (r.rolreplication)
      findings.push({ kind: 'attribute', role: r.rolname, detail: 'has REPLICATION' });
    if (r.rolbypassrls)
      warnings.push(`${r.rolname} has BYPASSRLS: row-level security does not apply`);
    if (WRITING_PREDEFINED_ROLES.includes(r.rolname)) {
      findings.push({
        kind: 'predefined_role',
        role: r.rolname,
        detail: `is a member of ${r.rolname}`,
      });
    }
  }

  const owned = await client.query<{ rolname: string; object: string }>(
    `SELECT a.rolname, o.object FROM (${ACTING_ROLES}) a JOIN LATERAL (
       SELECT 'database ' || quote_ident(d.datname) AS object FROM pg_catalog.pg_database d
         WHERE d.datname = current_database() AND d.datdba = a.oid
       UNION ALL
       SELECT 'schema ' || quote_ident(n.nspname) FROM pg_catalog.pg_namespace n
         WHERE n.nspowner = a.oid AND n.oid IN (${USER_NAMESPACES})
       UNION ALL
       SELECT 'relation ' || ${QUALIFIED} FROM pg_catalog.pg_class c
         WHERE c.relowner = a.oid AND c.relnamespace IN (${USER_NAMESPACES})
       UNION ALL
       SELECT 'function ' || p.oid::regprocedure::text FROM pg_catalog.pg_proc p
         WHERE p.proowner = a.oid AND p.pronamespace IN (${USER_NAMESPACES})
     ) o ON true
     WHERE a.rolname <> 'pg_database_owner'
     LIMIT ${LIMIT}`,
    [role],
  );
  for (const o of owned.rows) {
    findings.push({ kind: 'owner', role: o.rolname, detail: `owns ${o.object}` });
  }

  const privileges = await client.query<{ rolname: string; privilege: string; object: string }>(
    `SELECT a.rolname, p.privilege, ${QUALIFIED} AS object
     FROM (${ACTING_ROLES}) a
     CROSS JOIN pg_catalog.pg_class c
     CROSS JOIN unnest($2::text[]) AS p(privilege)
     WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
       AND c.relnamespace IN (${USER_NAMESPACES})
       AND (pg_catalog.has_table_privilege(a.oid, c.oid, p.privilege)
            OR (p.privilege IN ('INSERT', 'UPDATE', 'REFERENCES')
                AND pg_catalog.has_any_column_privilege(a.oid, c.oid, p.privilege)))
     ORDER BY 3, 2
     LIMIT ${LIMIT}`,
    [role, TABLE_PRIVILEGES],
  );
  for (const p of privileges.rows) {
    findings.push({ kind: 'privilege', role: p.rolname, detail: `${p.privilege} on ${p.object}` });
  }

  const sequences = await client.query<{ rolname: string; object: string }>(
    `SELECT a.rolname, ${QUALIFIED} AS object
     FROM (${ACTING_ROLES}) a CROSS JOIN pg_catalog.pg_class c
     WHERE c.relkind = 'S' AND c.relnamespace IN (${USER_NAMESPACES})
       AND (pg_catalog.has_sequence_privilege(a.oid, c.oid, 'UPDATE')
            OR pg_catalog.has_sequence_privilege(a.oid, c.oid, 'USAGE'))
     LIMIT ${LIMIT}`,
    [role],
  );
  for (const s of sequences.rows) {
    findings.push({
      kind: 'sequence',
      role: s.rolname,
      detail: `USAGE/UPDATE on sequence ${s.object} (nextval/setval)`,
    });
  }

  const creates = await client.query<{ rolname: string; object: string }>(
    `SELECT a.rolname, 'schema ' || quote_ident(n.nspname) AS object
     FROM (${ACTING_ROLES}) a CROSS JOIN pg_catalog.pg_namespace n
     WHERE n.oid IN (${USER_NAMESPACES}) AND pg_catalog.has_schema_privilege(a.oid, n.oid, 'CREATE')
     UNION ALL
     SELECT a.rolname, 'database ' || quote_ident(current_database())
     FROM (${ACTING_ROLES}) a
     WHERE pg_catalog.has_database_privilege(a.oid, current_database(), 'CREATE')
     LIMIT ${LIMIT}`,
    [role],
  );
  for (const c of creates.rows) {
    findings.push({
      kind: c.object.startsWith('schema') ? 'schema_create' : 'database_create',
      role: c.rolname,
      detail: `CREATE on ${c.object}`,
    });
  }
  return { findings, warnings };
}

/** The findings as one readable paragraph (first few of each kind). */
export function describeFindings(report: RoleReport): string {
  const lines = report.findings.slice(0, 12).map((f) => {
    const via = f.role === report.role ? '' : ` (through role ${f.role})`;
    return `${f.detail}${via}`;
  });
  const more = report.findings.length > 12 ? `; and ${report.findings.length - 12} more` : '';
  return `role "${report.role}" on database "${report.database}" can change data: ${lines.join('; ')}${more}`;
}

/** Why a role check refused, as thrown at startup (the process exits with code 2). */
export class PrivilegedRoleError extends ToolError {
  readonly report: RoleReport;
  constructor(report: RoleReport) {
    super(
      `Refusing to serve: ${describeFindings(report)}. Connect as a read-only role (servers/postgres/README.md, "The read-only role"), or set POSTGRES_ALLOW_PRIVILEGED_ROLE=true to start anyway.`,
      { code: 'privileged_role' },
    );
    this.report = report;
  }
}

/**
 * The role check of one database as a gate: run at start (or, when the database was down then,
 * before its first query), remembered once passed, and a refusal for good once it refused —
 * every later call is refused by the `role_check` rule. `run` is the check on a connection of
 * the database's (sql/database.ts supplies it); `afterPass` what else the first connection
 * loads (type names, schema warnings).
 */
export class RoleGate {
  #state:
    | { state: 'pending' }
    | { state: 'passed'; report: RoleReport; overridden: boolean }
    | { state: 'refused'; message: string; detail: string } = { state: 'pending' };
  #running: Promise<void> | undefined;
  #overrideListener: ((report: RoleReport) => void) | undefined;

  constructor(private readonly allowPrivileged: boolean) {}

  /** Whether the check refused the role. */
  get refused(): boolean {
    return this.#state.state === 'refused';
  }

  /** Why, in a few words for `/readyz` (the log has the whole reason). */
  get refusedDetail(): string {
    return this.#state.state === 'refused' ? this.#state.detail : '';
  }

  /** Shuts the gate for good with `refusal` (a mapped role refused at start), and throws it. */
  refuse(refusal: ToolError): never {
    this.#state = {
      state: 'refused',
      message: refusal.message,
      detail: 'a role of the role map was refused; see the server log',
    };
    throw refusal;
  }

  /**
   * Calls `listener` when the check passes only because of POSTGRES_ALLOW_PRIVILEGED_ROLE (now,
   * if it already has, or later when the database first answers).
   */
  onOverride(listener: (report: RoleReport) => void): void {
    this.#overrideListener = listener;
    if (this.#state.state === 'passed' && this.#state.overridden) listener(this.#state.report);
  }

  /**
   * Refuses a report whose role can write when no override is set: throws
   * {@link PrivilegedRoleError}, and the gate stays shut.
   */
  judge(report: RoleReport): void {
    if (report.findings.length > 0 && !this.allowPrivileged) {
      const refusal = new PrivilegedRoleError(report);
      this.#state = {
        state: 'refused',
        message: refusal.message,
        detail: 'the PostgreSQL role can write; see the server log',
      };
      throw refusal;
    }
  }

  /** Opens the gate for a report {@link judge} let through (once the first connection loaded). */
  pass(report: RoleReport): void {
    const overridden = report.findings.length > 0;
    this.#state = { state: 'passed', report, overridden };
    if (overridden) this.#overrideListener?.(report);
  }

  /** Resolves once the check has passed, running `verify` (once at a time) while pending. */
  async passed(verify: () => Promise<unknown>): Promise<void> {
    if (this.#state.state === 'passed') return;
    if (this.#state.state === 'refused') {
      throw new PolicyError('role_check', this.#state.message, { code: 'privileged_role' });
    }
    this.#running ??= verify()
      .then(() => undefined)
      .finally(() => {
        this.#running = undefined;
      });
    await this.#running;
  }
}
