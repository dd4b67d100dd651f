import { PolicyError, ToolError, UpstreamError } from '@gatehouse/core';
import type { Logger, ReadyResult } from '@gatehouse/core';
import pg from 'pg';
import type { PoolClient } from 'pg';
import type { PostgresConfig } from './config.js';
import { isMasked, parseMaskPatterns } from './masking.js';
import type { MaskPattern } from './masking.js';
import { checkRole, describeFindings } from './role-check.js';
import type { RoleReport } from './role-check.js';
import type { CatalogLookup, MaskedColumn } from './sql-policy.js';

/** What a database call needs from the tool call: its abort signal and deadline. */
export interface CallBounds {
  readonly signal: AbortSignal;
  /** Epoch ms by which the call must be answered. */
  readonly deadline: number;
}

/** The state of the startup role check. */
type Verification =
  | { state: 'pending' }
  | { state: 'passed'; report: RoleReport; overridden: boolean }
  | { state: 'refused'; message: string };

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

// Error codes of the network layer and of PostgreSQL (class 08, 53, 57P0x) that mean "the
// database is not there right now", not "your query is wrong".
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended|the database system is (?:starting up|shutting down|in recovery mode)/i;

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_NODE_CODES.has(code)) return true;
    // Class 08 is the connection, except 08P01 (a protocol violation: our request was wrong).
    if (/^(?:08(?!P01)|53|57P0[1-4])/.test(code)) return true;
  }
  return UNAVAILABLE_MESSAGES.test(error.message);
}

/**
 * Turns a failure into what the model sees. Query mistakes keep PostgreSQL's message (with the
 * position and hint); an outage becomes a retryable 503 without detail; an abort becomes the
 * core's typed reason (deadline, cancellation, shutdown).
 */
export function translateError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted === true) return signal.reason as unknown;
  if (error instanceof ToolError || error instanceof UpstreamError) return error;
  if (isUnavailable(error)) {
    return new UpstreamError({
      service: 'PostgreSQL',
      status: 503,
      message: 'PostgreSQL is unreachable',
      cause: error,
    });
  }
  if (error instanceof pg.DatabaseError) {
    const code = error.code ?? '';
    const where = error.position === undefined ? '' : ` (at character ${error.position})`;
    const hint = error.hint === undefined ? '' : ` Hint: ${error.hint}`;
    if (code === '57014') {
      return new ToolError(
        /statement timeout/i.test(error.message)
          ? 'The query ran past the statement timeout and PostgreSQL cancelled it. Narrow it (filters, LIMIT, aggregates) or check its plan with postgres_explain.'
          : 'PostgreSQL cancelled the query.',
        { code: 'statement_timeout', cause: error },
      );
    }
    if (code === '55P03') {
      return new ToolError(
        'The query waited too long for a lock held by another session (lock_timeout) and was cancelled. Try again shortly.',
        { code: 'lock_timeout', cause: error },
      );
    }
    if (code === '25006') {
      return new ToolError(
        `PostgreSQL refused a write inside the read-only transaction: ${error.message}. This server only reads.`,
        { code: 'read_only', cause: error },
      );
    }
    if (code === '08P01' && /bind message supplies/.test(error.message)) {
      return new ToolError(
        `The SQL and its params do not match: ${error.message}. Pass one value in params for each $n.`,
        { code: 'query_error', cause: error },
      );
    }
    if (code === '42501') {
      return new ToolError(`PostgreSQL denied access: ${error.message}.${hint}`, {
        code: 'permission_denied',
        cause: error,
      });
    }
    return new ToolError(`PostgreSQL error ${code}: ${error.message}${where}.${hint}`, {
      code: 'query_error',
      cause: error,
    });
  }
  return error;
}

function waitOrAbort<T>(promise: Promise<T>, signal: AbortSignal, onLate: (value: T) => void) {
  if (signal.aborted) {
    promise.then(onLate, () => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      promise.then(onLate, () => undefined);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) onLate(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** The database name of a connection URL (libpq's default: the user name). */
export function databaseName(url: string): string {
  const parsed = new URL(url);
  return (
    decodeURIComponent(parsed.pathname.replace(/^\//, '')) ||
    decodeURIComponent(parsed.username) ||
    'postgres'
  );
}

/** Oid → type name of the built-in types, for column descriptions. */
type TypeNames = Map<number, string>;

/**
 * The upstream client: a `pg` pool whose every call runs in its own read-only transaction
 * (layer 3), behind the startup role check (layer 1), with catalog lookups cached for the
 * SQL policy (layer 2) and cancellation that reaches the backend.
 */
export class PostgresDatabase {
  readonly database: string;
  readonly schemas: readonly string[];
  private readonly pool: pg.Pool;
  private readonly config: PostgresConfig;
  private readonly logger: Logger;
  private readonly maskPatterns: readonly MaskPattern[];
  private verification: Verification = { state: 'pending' };
  private verifying: Promise<void> | undefined;
  private readonly typeNames: TypeNames = new Map();
  private readonly functionCache = new Map<string, { volatile: boolean; at: number }>();
  private readonly operatorCache = new Map<string, { volatile: boolean; at: number }>();
  private maskCache: { columns: readonly MaskedColumn[]; at: number } | undefined;
  private readonly beginPrefix: string;

  private overrideListener: ((report: RoleReport) => void) | undefined;

  constructor(config: PostgresConfig, logger: Logger, schemas: readonly string[]) {
    this.config = config;
    this.logger = logger;
    this.schemas = schemas;
    this.maskPatterns = parseMaskPatterns(config.POSTGRES_MASK_COLUMNS);
    this.database = databaseName(config.POSTGRES_URL);
    this.pool = new pg.Pool({
      connectionString: config.POSTGRES_URL,
      max: config.POSTGRES_POOL_SIZE,
      connectionTimeoutMillis: config.POSTGRES_CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      application_name: 'gatehouse-postgres',
      // A session default as well as the per-call BEGIN READ ONLY: should anything ever run
      // outside our transaction, it is still read-only. (pg-pool awaits the returned promise.)
      onConnect: (client) =>
        client.query(
          `SET SESSION default_transaction_read_only = on; SET SESSION statement_timeout = ${config.POSTGRES_STATEMENT_TIMEOUT_MS}`,
        ) as unknown as void,
    });
    // An idle connection that dies (database restart, network cut) must not crash the process;
    // the pool drops it and connects afresh on the next call.
    this.pool.on('error', (error) => {
      this.logger.warn({ err: error }, 'an idle PostgreSQL connection failed');
    });
    const path = this.schemas.map((s) => pg.escapeIdentifier(s)).join(', ');
    this.beginPrefix = `BEGIN READ ONLY; SET LOCAL search_path = ${path}; SET LOCAL lock_timeout = ${config.POSTGRES_LOCK_TIMEOUT_MS}`;
  }

  /**
   * Calls `listener` when the role check passes only because of POSTGRES_ALLOW_PRIVILEGED_ROLE
   * (now, if it already has, or later when the database first answers).
   */
  onOverride(listener: (report: RoleReport) => void): void {
    this.overrideListener = listener;
    if (this.verification.state === 'passed' && this.verification.overridden) {
      listener(this.verification.report);
    }
  }

  /**
   * Runs the startup role check (layer 1). Throws {@link PrivilegedRoleError} when the role can
   * write and no override is set; throws an unavailable error when the database cannot be
   * reached (the caller may start anyway: the check then runs before the first query).
   */
  async verify(): Promise<RoleReport> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw translateError(error);
    });
    let failed = false;
    try {
      const report = await checkRole(client);
      for (const warning of report.warnings) this.logger.warn({ role: report.role }, warning);
      if (report.findings.length > 0 && !this.config.POSTGRES_ALLOW_PRIVILEGED_ROLE) {
        const refusal = new PrivilegedRoleError(report);
        this.verification = { state: 'refused', message: refusal.message };
        throw refusal;
      }
      await this.loadTypeNames(client);
      const overridden = report.findings.length > 0;
      this.verification = { state: 'passed', report, overridden };
      if (overridden) this.overrideListener?.(report);
      return report;
    } catch (error) {
      failed = !(error instanceof PrivilegedRoleError);
      throw error instanceof PrivilegedRoleError ? error : translateError(error);
    } finally {
      client.release(failed);
    }
  }

  private async ensureVerified(): Promise<void> {
    if (this.verification.state === 'passed') return;
    if (this.verification.state === 'refused') {
      throw new PolicyError('role_check', this.verification.message, { code: 'privileged_role' });
    }
    this.verifying ??= this.verify()
      .then(() => undefined)
      .finally(() => {
        this.verifying = undefined;
      });
    await this.verifying;
  }

  private async loadTypeNames(client: pg.ClientBase): Promise<void> {
    const types = await client.query<{ oid: string; name: string }>(
      `SELECT t.oid::text AS oid, pg_catalog.format_type(t.oid, NULL) AS name
       FROM pg_catalog.pg_type t WHERE t.typnamespace = 'pg_catalog'::regnamespace`,
    );
    for (const t of types.rows) this.typeNames.set(Number(t.oid), t.name);
  }

  /** Type names of column type oids (built-ins cached; others looked up once). */
  async typeNamesOf(client: pg.ClientBase, oids: readonly number[]): Promise<TypeNames> {
    const missing = [...new Set(oids)].filter((oid) => !this.typeNames.has(oid));
    if (missing.length > 0) {
      const found = await client.query<{ oid: string; name: string }>(
        `SELECT t.oid::text AS oid, pg_catalog.format_type(t.oid, NULL) AS name
         FROM pg_catalog.pg_type t WHERE t.oid = ANY($1::oid[])`,
        [missing],
      );
      for (const t of found.rows) this.typeNames.set(Number(t.oid), t.name);
    }
    return this.typeNames;
  }

  /**
   * Runs `fn` inside `BEGIN READ ONLY` with this call's timeouts and the allowed search_path,
   * then always rolls back (layer 3). The client is destroyed, never reused, after any error or
   * cancellation. Aborting the call cancels the backend query through another connection.
   */
  async transaction<T>(bounds: CallBounds, fn: (client: PoolClient) => Promise<T>): Promise<T> {
    try {
      await this.ensureVerified();
    } catch (error) {
      throw translateError(error, bounds.signal);
    }
    const client = await this.begin(bounds);
    let spoiled: unknown;
    const pid = (client as unknown as { processID?: number }).processID;
    const onAbort = (): void => {
      spoiled ??= bounds.signal.reason ?? new Error('aborted');
      if (pid !== undefined) void this.cancelBackend(pid);
    };
    bounds.signal.addEventListener('abort', onAbort, { once: true });
    try {
      if (bounds.signal.aborted) throw bounds.signal.reason;
      return await fn(client);
    } catch (error) {
      spoiled ??= error;
      throw translateError(error, bounds.signal);
    } finally {
      bounds.signal.removeEventListener('abort', onAbort);
      if (spoiled === undefined) {
        try {
          await client.query('ROLLBACK');
        } catch (error) {
          spoiled = error;
        }
      }
      // release(true) destroys the connection: whatever state an error left it in dies with it.
      client.release(spoiled !== undefined);
    }
  }

  /** A pooled connection inside `BEGIN READ ONLY` with this call's settings. */
  private async begin(bounds: CallBounds): Promise<PoolClient> {
    for (let attempt = 1; ; attempt++) {
      let client: PoolClient;
      try {
        client = await waitOrAbort(this.pool.connect(), bounds.signal, (late) => late.release());
      } catch (error) {
        throw translateError(error, bounds.signal);
      }
      try {
        const remaining = Math.floor(bounds.deadline - Date.now());
        const timeout = Math.max(1, Math.min(this.config.POSTGRES_STATEMENT_TIMEOUT_MS, remaining));
        await client.query(
          // The closing SELECT takes the transaction's snapshot: from then on PostgreSQL refuses
          // SET TRANSACTION READ WRITE ("must be set before any query"), which SET alone does not.
          `${this.beginPrefix}; SET LOCAL statement_timeout = ${timeout}; SET LOCAL idle_in_transaction_session_timeout = ${timeout + 5_000}; SELECT 1`,
        );
        return client;
      } catch (error) {
        client.release(true);
        // An idle pooled connection the server dropped (restart, failover, network cut) fails
        // here, before anything of the call ran: one fresh connection may try again.
        if (attempt === 1 && !bounds.signal.aborted && isUnavailable(error)) continue;
        throw translateError(error, bounds.signal);
      }
    }
  }

  /** Cancels the query running on backend `pid`, from a separate short-lived connection. */
  async cancelBackend(pid: number): Promise<void> {
    const client = new pg.Client({
      connectionString: this.config.POSTGRES_URL,
      connectionTimeoutMillis: this.config.POSTGRES_CONNECT_TIMEOUT_MS,
      application_name: 'gatehouse-postgres-cancel',
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT pg_catalog.pg_cancel_backend($1)', [pid]);
      this.logger.debug({ pid }, 'cancelled the backend query');
    } catch (error) {
      this.logger.warn({ err: error, pid }, 'could not cancel the backend query');
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Catalog lookups for the SQL policy, cached for POSTGRES_CATALOG_TTL_MS. */
  catalog(client: pg.ClientBase): CatalogLookup {
    const ttl = this.config.POSTGRES_CATALOG_TTL_MS;
    const fresh = (at: number): boolean => Date.now() - at < ttl;
    const cached = async (
      cache: Map<string, { volatile: boolean; at: number }>,
      keys: readonly string[],
      sql: string,
    ): Promise<ReadonlyMap<string, boolean>> => {
      const missing = keys.filter((k) => {
        const hit = cache.get(k);
        return hit === undefined || !fresh(hit.at);
      });
      if (missing.length > 0) {
        const now = Date.now();
        const rows = await client.query<{ key: string; volatile: boolean }>(sql, [missing]);
        for (const key of missing) cache.set(key, { volatile: false, at: now });
        for (const row of rows.rows) cache.set(row.key, { volatile: row.volatile, at: now });
      }
      return new Map(keys.map((k) => [k, cache.get(k)!.volatile]));
    };
    return {
      functionVolatility: (keys) =>
        cached(
          this.functionCache,
          keys,
          `SELECT n.nspname || '.' || p.proname AS key, bool_or(p.provolatile = 'v') AS volatile
           FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname || '.' || p.proname = ANY($1::text[])
           GROUP BY 1`,
        ),
      operatorVolatility: (keys) =>
        cached(
          this.operatorCache,
          keys,
          `SELECT n.nspname || '.' || o.oprname AS key, bool_or(p.provolatile = 'v') AS volatile
           FROM pg_catalog.pg_operator o
           JOIN pg_catalog.pg_proc p ON p.oid = o.oprcode
           JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
           WHERE n.nspname || '.' || o.oprname = ANY($1::text[])
           GROUP BY 1`,
        ),
      maskedColumns: async () => {
        if (this.maskPatterns.length === 0) return [];
        if (this.maskCache !== undefined && fresh(this.maskCache.at)) return this.maskCache.columns;
        const columns = await this.resolveMasked(client);
        this.maskCache = { columns, at: Date.now() };
        return columns;
      },
    };
  }

  /** The masked columns that exist in the allowed schemas. */
  async resolveMasked(client: pg.ClientBase): Promise<MaskedColumn[]> {
    if (this.maskPatterns.length === 0) return [];
    const found = await client.query<{
      schema: string;
      table: string;
      column: string;
      table_oid: string;
      attnum: number;
    }>(
      `SELECT n.nspname AS schema, c.relname AS table, a.attname AS column,
              c.oid::text AS table_oid, a.attnum
       FROM pg_catalog.pg_attribute a
       JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       WHERE a.attname = ANY($1::text[]) AND n.nspname = ANY($2::text[])
         AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`,
      [[...new Set(this.maskPatterns.map((p) => p.column))], this.schemas],
    );
    return found.rows
      .filter((r) => isMasked(this.maskPatterns, r.schema, r.table, r.column))
      .map((r) => ({
        schema: r.schema,
        table: r.table,
        column: r.column,
        tableOid: Number(r.table_oid),
        attnum: r.attnum,
      }));
  }

  /** Whether `schema.table.column` is masked by configuration. */
  isMasked(schema: string, table: string, column: string): boolean {
    return isMasked(this.maskPatterns, schema, table, column);
  }

  private refused(): boolean {
    return this.verification.state === 'refused';
  }

  /** `/readyz`: the database answers (within 2 s) and the role check has not refused. */
  async ready(): Promise<ReadyResult> {
    const refused = { ready: false, detail: 'the PostgreSQL role can write; see the server log' };
    if (this.refused()) return refused;
    const probe = AbortSignal.timeout(2_000);
    try {
      await this.transaction({ signal: probe, deadline: Date.now() + 2_000 }, async (client) => {
        await client.query('SELECT 1');
      });
      return { ready: true };
    } catch (error) {
      // The probe may have run the role check for the first time.
      if (this.refused()) return refused;
      this.logger.debug({ err: error }, 'readiness check failed');
      return { ready: false, detail: 'PostgreSQL is unreachable' };
    }
  }

  /** Closes the pool (on shutdown). */
  async close(): Promise<void> {
    await this.pool.end();
  }
}
