import { PolicyError, ToolError, UpstreamError, traceUpstream } from '@gatehouse/core';
import type { EffectiveUser, Logger, Principal, ReadyResult } from '@gatehouse/core';
import pg from 'pg';
import type { PoolClient } from 'pg';
import type { PostgresConfig } from '../config.js';
import type { CappedRows, QueryOutput } from './execute.js';
import { Catalogs } from './catalogs.js';
import type { Catalog } from './catalogs.js';
import { PrivilegedRoleError, RoleGate, checkRole } from './role-check.js';
import { MappedRoleError } from './mapped-roles.js';
import { frameLimit, guardFrames } from './frame-guard.js';
import {
  ParameterTypes,
  ReadOnlyStatement,
  SESSION_CHECK,
  callStatements,
} from './read-only-statement.js';
import type { CallSession, CallStatements, QueryParam } from './read-only-statement.js';
import { SERVER_IDENTITY } from '../role-map.js';
import type { DbIdentity, RoleMap } from '../role-map.js';
import { checkMappedRoles } from './mapped-roles.js';
import type { MappedRolesReport } from './mapped-roles.js';
import type { RoleReport } from './role-check.js';
import type { CallBounds } from '@gatehouse/core';

/** What a call passes down to every request (the core's; ADR 0018). */
export type { CallBounds } from '@gatehouse/core';
export type { Catalog, MaskedSet } from './catalogs.js';

/**
 * A call's bounds and who is asking: a handler's context passes as it is. `principal: null` is
 * the server's own work (readiness, start checks), which runs as the login role.
 */
export interface DbCall extends CallBounds {
  readonly principal: Principal | null;
  /** Where the call notes the role it ran as (a handler's context: the audit record's). */
  actsAs?(effective: EffectiveUser): void;
}

/** The server's own call within `ms` (readiness, start checks): the login role, no caller. */
export function serverCall(ms: number): DbCall {
  return { signal: AbortSignal.timeout(ms), deadline: Date.now() + ms, principal: null };
}

/**
 * Refuses the rows of a statement that changed who it runs as: a function it calls switched the
 * role or set a gatehouse setting (ADR 0027). Nothing of its answer is handed out.
 */
export class IdentityChangedError extends PolicyError {
  constructor(changed: string) {
    super(
      'role_switch',
      `The statement changed who it runs as inside its transaction (${changed}): something it calls switches role or sets the settings row-level security reads. Its answer was discarded.`,
      { code: 'identity_changed' },
    );
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

/**
 * Errors a statement causes by what it asks of the server — memory for the values it builds,
 * temporary files for its sorts: PostgreSQL answers them to that statement, and they are the
 * request's, not an outage (the statement would fail again; others are not affected).
 */
const STATEMENT_RESOURCE_CODES = new Set(['53200', '53100']);

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (error instanceof pg.DatabaseError && STATEMENT_RESOURCE_CODES.has(code as string)) {
    return false;
  }
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
    if (STATEMENT_RESOURCE_CODES.has(code) || code.startsWith('54')) {
      return new ToolError(
        `PostgreSQL could not run this statement (${code}): ${error.message}. It asks more of the database server than it allows: build smaller values (left(x, 1000)), fewer rows or columns, or aggregate without building the values (count, sum, length).`,
        { code: 'statement_too_large', cause: error },
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
    // Class 28 (invalid authorization: a wrong password, a role that may not log in, no
    // pg_hba.conf entry) and 3D000 (no such database): what POSTGRES_URL says is wrong, not the call.
    if (code.startsWith('28') || code === '3D000') {
      return new ToolError(
        `PostgreSQL refused the server's login (${code}): ${error.message}. The operator must fix POSTGRES_URL.`,
        { code: 'login_refused', cause: error },
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

/** The span attributes of a database: system, host and port (never the credentials). */
function spanAttributesOf(connectionUrl: string): Record<string, string | number> {
  let url: URL | undefined;
  try {
    url = new URL(connectionUrl);
  } catch {
    url = undefined;
  }
  return {
    'db.system.name': 'postgresql',
    ...(url?.hostname ? { 'server.address': url.hostname } : {}),
    ...(url?.port ? { 'server.port': Number(url.port) } : {}),
  };
}

/**
 * A fixed statement with its $n replaced by quoted literals (`escapeLiteral`), for the simple
 * protocol's multi-statement queries: the values are the call's settings, never SQL.
 */
function withLiterals(client: pg.ClientBase, text: string, values: readonly string[]): string {
  return text.replace(/\$(\d+)/g, (_all, n: string) =>
    client.escapeLiteral(values[Number(n) - 1]!),
  );
}

/** One statement for {@link StatementCheckout.run}. */
export interface StatementPlan {
  readonly sql: string;
  readonly params: readonly QueryParam[];
  /** Where its rows go, under their caps. */
  readonly rows: CappedRows;
  /**
   * Whether to check the session after ROLLBACK (default true). False only when the catalog
   * rules showed the statement runs nothing that can leave state behind.
   */
  readonly sessionCheck?: boolean;
}

/** One call's pooled connection, from {@link PostgresDatabase.checkout} to `run` or `abandon`. */
export interface StatementCheckout {
  /** The connection, for the catalog lookups that decide the statement. */
  readonly client: PoolClient;
  /** The role the statement runs as (undefined: the login role), which keys the caches. */
  readonly role: string | undefined;
  /** The types PostgreSQL infers for the parameters of `sql`, asked as the call's role. */
  readonly parameterTypes: (sql: string) => Promise<readonly number[]>;
  /**
   * Runs the statement in its own read-only transaction, in one round trip (see
   * {@link ReadOnlyStatement}), collecting its rows into `plan.rows` under their caps, and
   * returns the connection to the pool (or destroys it). On an error, call `abandon`.
   */
  run(plan: StatementPlan): Promise<QueryOutput>;
  /**
   * Ends the checkout after an error. True when the connection had dropped before PostgreSQL
   * answered anything: a fresh checkout may try once more.
   */
  abandon(error: unknown): boolean;
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
  /** The catalog lookups and their caches (catalogs.ts). */
  private readonly catalogs: Catalogs;
  /** The startup role check, as a gate every call passes (role-check.ts). */
  private readonly roleGate: RoleGate;
  private readonly typeNames: TypeNames = new Map();
  /** Who each caller's calls run as (ADR 0027); undefined: every call as the login role. */
  readonly roleMap: RoleMap | undefined;
  /** The settings and identity-check statements of this database's calls. */
  private readonly statements: CallStatements;
  /** What the start found of the mapped roles (once verified). */
  mappedRoles: MappedRolesReport | undefined;
  /** The allowed schemas as a set_config value, quoted where they need it. */
  private readonly searchPath: string;
  /** Span attributes of this database: system, host and port (never the credentials). */
  readonly spanAttributes: Record<string, string | number>;

  constructor(
    config: PostgresConfig,
    logger: Logger,
    schemas: readonly string[],
    options: { catalogCacheEntries?: number; roleMap?: RoleMap | undefined } = {},
  ) {
    this.config = config;
    this.logger = logger;
    this.schemas = schemas;
    this.roleMap = options.roleMap;
    this.statements = callStatements({
      role: this.roleMap !== undefined,
      claims: this.roleMap?.claims ?? [],
    });
    this.catalogs = new Catalogs(config, options);
    this.roleGate = new RoleGate(config.POSTGRES_ALLOW_PRIVILEGED_ROLE);
    this.database = databaseName(config.POSTGRES_URL);
    // Two spellings of the same list: SQL needs every name quoted (a schema may be called
    // "user"), a set_config value is split by PostgreSQL itself and shows as written.
    const path = this.schemas.map((s) => pg.escapeIdentifier(s)).join(', ');
    this.searchPath = this.schemas
      .map((s) => (/^[a-z_][a-z0-9_]*$/.test(s) ? s : pg.escapeIdentifier(s)))
      .join(', ');
    this.pool = new pg.Pool({
      connectionString: config.POSTGRES_URL,
      max: config.POSTGRES_POOL_SIZE,
      connectionTimeoutMillis: config.POSTGRES_CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      application_name: 'gatehouse-postgres',
      // A session default as well as the per-call BEGIN READ ONLY: should anything ever run
      // outside our transaction, it is still read-only. The session's search_path is the
      // allowed schemas too, so that the catalog lookups deparse view definitions the way
      // name resolution reads them. (pg-pool awaits the returned promise.)
      onConnect: (client) => {
        // From its first message on, no message larger than the limit is buffered.
        guardFrames(client, frameLimit(config.POSTGRES_MAX_BYTES));
        return client.query(
          `SET SESSION default_transaction_read_only = on; SET SESSION statement_timeout = ${config.POSTGRES_STATEMENT_TIMEOUT_MS}; SET SESSION search_path = ${path}`,
        ) as unknown as void;
      },
    });
    // An idle connection that dies (database restart, network cut) must not crash the process;
    // the pool drops it and connects afresh on the next call.
    this.pool.on('error', (error) => {
      this.logger.warn({ err: error }, 'an idle PostgreSQL connection failed');
    });
    // A checked-out client whose connection drops (a restart, a network cut) emits 'error' too,
    // and pg-pool listens only while a client is idle: without this listener that is an
    // uncaught exception that ends the process. The call on it fails through its own query
    // (or the next one), is answered as unavailable, and the client is destroyed.
    this.pool.on('connect', (client) => {
      client.on('error', (error) => {
        this.logger.debug({ err: error }, 'a PostgreSQL connection in use failed');
      });
    });
    this.spanAttributes = spanAttributesOf(config.POSTGRES_URL);
  }

  /** See {@link RoleGate.onOverride}. */
  onOverride(listener: (report: RoleReport) => void): void {
    this.roleGate.onOverride(listener);
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
      this.roleGate.judge(report);
      if (this.roleMap !== undefined) {
        const mapped = await checkMappedRoles(client, report.role, this.roleMap, this.schemas);
        for (const warning of mapped.warnings) this.logger.warn({ role_map: true }, warning);
        if (mapped.problems.length > 0) this.roleGate.refuse(new MappedRoleError(mapped));
        this.mappedRoles = mapped;
      }
      await this.loadTypeNames(client);
      await this.warnAboutSchemas(client);
      this.roleGate.pass(report);
      return report;
    } catch (error) {
      const refusal = error instanceof PrivilegedRoleError || error instanceof MappedRoleError;
      failed = !refusal;
      throw refusal ? error : translateError(error);
    } finally {
      client.release(failed);
    }
  }

  /** A configured schema that does not exist (a typo?) or that the role cannot use: a warning. */
  private async warnAboutSchemas(client: pg.ClientBase): Promise<void> {
    const found = await client.query<{ schema: string; exists: boolean }>(
      `SELECT s AS schema, n.oid IS NOT NULL AS exists
       FROM unnest($1::text[]) s LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = s
       WHERE n.oid IS NULL OR NOT pg_catalog.has_schema_privilege(n.oid, 'USAGE')`,
      [this.schemas],
    );
    for (const { schema, exists } of found.rows) {
      this.logger.warn(
        { schema, database: this.database },
        exists
          ? `POSTGRES_SCHEMAS: the role has no USAGE on schema "${schema}": its tables cannot be read`
          : `POSTGRES_SCHEMAS: schema "${schema}" does not exist in database "${this.database}" (a typo?)`,
      );
    }
  }

  private async loadTypeNames(client: pg.ClientBase): Promise<void> {
    const types = await client.query<{ oid: string; name: string }>(
      `SELECT t.oid::text AS oid, pg_catalog.format_type(t.oid, NULL) AS name
       FROM pg_catalog.pg_type t WHERE t.typnamespace = 'pg_catalog'::regnamespace`,
    );
    for (const t of types.rows) this.typeNames.set(Number(t.oid), t.name);
  }

  /**
   * Type names of column type oids (built-ins cached; others looked up once, on any pooled
   * connection: the call's own is released by then).
   */
  async typeNamesOf(oids: readonly number[]): Promise<TypeNames> {
    const missing = [...new Set(oids)].filter((oid) => !this.typeNames.has(oid));
    if (missing.length > 0) {
      const found = await this.pool.query<{ oid: string; name: string }>(
        `SELECT t.oid::text AS oid, pg_catalog.format_type(t.oid, NULL) AS name
         FROM pg_catalog.pg_type t WHERE t.oid = ANY($1::oid[])`,
        [missing],
      );
      for (const t of found.rows) this.typeNames.set(Number(t.oid), t.name);
    }
    return this.typeNames;
  }

  /** The catalog lookups of one call, on its connection (catalogs.ts). */
  catalog(client: pg.ClientBase, role: string | undefined): Catalog {
    return this.catalogs.lookup(client, role);
  }

  /**
   * Who `call` runs as: the role map's role for its principal (refused, rule `role_map`, when
   * none is mapped), or the login role for the server's own calls and without a role map —
   * always with `gatehouse.principal` set (ADR 0027).
   */
  identity(call: DbCall): DbIdentity {
    if (call.principal === null) return SERVER_IDENTITY;
    // A caller without a principal is a bug of the caller's: never the login role for it.
    if (call.principal === undefined) throw new TypeError('a database call without a principal');
    if (this.roleMap === undefined) {
      return { role: undefined, principal: call.principal.id, claims: [] };
    }
    const identity = this.roleMap.identity(call.principal);
    // The audit record names the role (user.effective), and the report counts calls by it.
    call.actsAs?.({ id: identity.role!, name: identity.role!, domain: `pg:${this.database}` });
    return identity;
  }

  /** Entries in the catalog cache now (bounded by the cache's size). */
  get catalogCacheSize(): number {
    return this.catalogs.cachedSets;
  }

  /**
   * Which masked columns the role — or, with a role map, any mapped role — may SELECT, and which
   * patterns match none (catalogs.ts).
   */
  maskingReport(): Promise<{ columns: number; readable: string[]; unmatched: string[] }> {
    return this.catalogs.maskingReport(this.pool, this.roleMap?.roles ?? []);
  }

  /**
   * A pooled connection for one statement, the role check passed first. The caller runs its
   * catalog rules on `client` (cached lookups cost nothing, a miss one query), then ends the
   * checkout one of two ways: {@link StatementCheckout.run} the statement, or — after any error —
   * {@link StatementCheckout.abandon}. The connection is destroyed, never reused, after any
   * error, a cancellation, a dropped result or a session left dirty. Aborting the call cancels
   * the backend query through another connection.
   */
  async checkout(bounds: DbCall): Promise<StatementCheckout> {
    // Who the call runs as, first: a caller with no role is refused before any connection.
    const identity = this.identity(bounds);
    await this.verified(bounds);
    const client = await this.connect(bounds);
    const abort = this.cancelOnAbort(client, bounds.signal);
    let sent = false;
    let answered = false;
    let released = false;
    const release = (destroy: boolean): void => {
      released = true;
      client.release(destroy);
    };
    if (bounds.signal.aborted) {
      abort.stop();
      client.release(true);
      throw translateError(bounds.signal.reason, bounds.signal);
    }
    return {
      client,
      role: identity.role,
      parameterTypes: (sql) => {
        const described = new ParameterTypes(sql, this.session(bounds, identity));
        client.query(described);
        return described.done;
      },
      run: async (plan) => {
        sent = true;
        const statement = new ReadOnlyStatement(
          this.session(bounds, identity),
          plan.sql,
          plan.params,
          plan.rows,
          plan.sessionCheck ?? true,
        );
        client.query(statement);
        const outcome = await statement.done.finally(() => {
          answered = statement.answered;
        });
        const spoiled =
          'dropped' in outcome
            ? new Error('a result past the byte cap was dropped unread')
            : this.leftBehind(outcome.dirty);
        abort.stop();
        // release(true) destroys the connection: whatever state it was left in dies with it.
        const changed = 'changed' in outcome && outcome.changed !== '';
        release(changed || (spoiled ?? abort.reason()) !== undefined);
        if (changed) throw new IdentityChangedError(outcome.changed);
        return plan.rows.output(await this.typeNamesOf(plan.rows.fields.map((f) => f.dataTypeID)));
      },
      abandon: (error) => {
        if (released) return false; // it failed after the statement, naming its column types
        abort.stop();
        // A statement the rules refused before anything of it was sent leaves the connection
        // as it was (only the catalog lookups ran on it); any other error destroys it.
        release(sent || !(error instanceof PolicyError) || abort.reason() !== undefined);
        // A pooled connection the server dropped (restart, failover, network cut) fails before
        // PostgreSQL answered anything: one fresh connection may try again.
        return !answered && !bounds.signal.aborted && isUnavailable(error);
      },
    };
  }

  /** The role check has passed (run now if it has not yet), or the call's error. */
  private async verified(bounds: CallBounds): Promise<void> {
    try {
      await this.roleGate.passed(() => this.verify());
    } catch (error) {
      throw translateError(error, bounds.signal);
    }
  }

  /** statement_timeout of a call: the setting, or less when the call's deadline is nearer. */
  private statementTimeout(bounds: CallBounds): number {
    const remaining = Math.floor(bounds.deadline - Date.now());
    return Math.max(1, Math.min(this.config.POSTGRES_STATEMENT_TIMEOUT_MS, remaining));
  }

  /**
   * While the call runs, aborting it cancels the backend query through another connection.
   * `reason` is the abort's reason once it fired (the connection must not be reused then).
   */
  private cancelOnAbort(client: PoolClient, signal: AbortSignal) {
    let reason: unknown;
    const pid = (client as unknown as { processID?: number }).processID;
    const onAbort = (): void => {
      reason = signal.reason ?? new Error('aborted');
      if (pid !== undefined) void this.cancelBackend(pid);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    return {
      reason: (): unknown => reason,
      stop: (): void => signal.removeEventListener('abort', onAbort),
    };
  }

  /** What the session check found, logged, as the reason not to reuse the connection. */
  private leftBehind(dirty: string): Error | undefined {
    if (dirty === '') return undefined;
    this.logger.warn(
      { dirty },
      'a call left session state behind (a function doing more than it declares); the connection was destroyed',
    );
    return new Error(`session left dirty: ${dirty}`);
  }

  /**
   * This call's transaction settings (search_path, lock, statement and idle timeouts, who is
   * asking) and what the identity check expects, as the fixed statements' values.
   */
  private session(bounds: CallBounds, identity: DbIdentity): CallSession {
    const timeout = this.statementTimeout(bounds);
    const role = identity.role ?? 'none';
    return {
      statements: this.statements,
      settings: [
        this.searchPath,
        String(this.config.POSTGRES_LOCK_TIMEOUT_MS),
        String(timeout),
        String(timeout + 5_000),
        identity.principal,
        ...(this.roleMap === undefined ? [] : [role]),
        ...identity.claims,
      ],
      identity: [role, identity.principal, ...identity.claims],
    };
  }

  /** A pooled connection, or the call's abort reason. */
  private async connect(bounds: CallBounds): Promise<PoolClient> {
    try {
      return await waitOrAbort(this.pool.connect(), bounds.signal, (late) => late.release());
    } catch (error) {
      throw translateError(error, bounds.signal);
    }
  }

  /**
   * Runs `fn` inside `BEGIN READ ONLY` with this call's timeouts and the allowed search_path, as
   * the caller's role (`fn` gets it, for the caches it keys), then always rolls back (layer 3);
   * a value is handed back only when the call's role and settings are still what was set. The client is destroyed, never reused, after any error or
   * cancellation. Aborting the call cancels the backend query through another connection.
   */
  async transaction<T>(
    bounds: DbCall,
    fn: (client: PoolClient, role: string | undefined) => Promise<T>,
  ): Promise<T> {
    // One CLIENT span per transaction when tracing is on: the database system and host, no SQL.
    return traceUpstream('postgresql transaction', this.spanAttributes, () =>
      this.runTransaction(bounds, fn),
    );
  }

  private async runTransaction<T>(
    bounds: DbCall,
    fn: (client: PoolClient, role: string | undefined) => Promise<T>,
  ): Promise<T> {
    const identity = this.identity(bounds);
    await this.verified(bounds);
    const session = this.session(bounds, identity);
    const client = await this.begin(bounds, session);
    const abort = this.cancelOnAbort(client, bounds.signal);
    let value: T;
    try {
      if (bounds.signal.aborted) throw bounds.signal.reason;
      value = await fn(client, identity.role);
    } catch (error) {
      abort.stop();
      // A refusal by the rules is no error of the connection's: it is rolled back and checked
      // like any other call's.
      await this.end(client, session, error instanceof PolicyError ? abort.reason() : error);
      throw translateError(error, bounds.signal);
    }
    abort.stop();
    const changed = await this.end(client, session, abort.reason());
    if (changed !== '') throw new IdentityChangedError(changed);
    return value;
  }

  /**
   * Ends a transaction and releases its connection. Unless `spoiled` (then the connection is
   * destroyed): in one round trip, what of the call's role and settings changed, ROLLBACK, and
   * what the session kept that a clean one does not — session advisory locks, prepared
   * statements, open cursors, LISTEN channels, changed settings, temporary objects, another
   * role. Back to the pool only when clean. Returns what changed ('' when nothing did, or when
   * the transaction failed anyway).
   */
  private async end(client: PoolClient, session: CallSession, spoiled: unknown): Promise<string> {
    if (spoiled !== undefined) {
      // release(true) destroys the connection: whatever state an error left it in dies with it.
      client.release(true);
      return '';
    }
    let changed = 'the identity check did not answer';
    let dirty: string | undefined;
    try {
      const results = (await client.query(
        `${withLiterals(client, session.statements.identity, session.identity)}; ROLLBACK; ${SESSION_CHECK}`,
      )) as unknown as Array<{ rows: Array<{ changed?: string; dirty?: string }> }>;
      changed = results[0]?.rows[0]?.changed ?? changed;
      dirty = results[2]?.rows[0]?.dirty ?? 'the session check did not answer';
    } catch (error) {
      this.logger.debug({ err: error }, 'ending a read-only transaction failed');
    }
    client.release(changed !== '' || dirty === undefined || this.leftBehind(dirty) !== undefined);
    return changed;
  }

  /** A pooled connection inside `BEGIN READ ONLY` with this call's settings, as its role. */
  private async begin(bounds: CallBounds, session: CallSession): Promise<PoolClient> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.connect(bounds);
      try {
        // The settings' SELECT takes the transaction's snapshot: from then on PostgreSQL refuses
        // SET TRANSACTION READ WRITE ("must be set before any query"), which SET alone does not.
        await client.query(
          `BEGIN READ ONLY; ${withLiterals(client, session.statements.settings, session.settings)}`,
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

  /** `/readyz`: the database answers (within 2 s) and the role check has not refused. */
  async ready(): Promise<ReadyResult> {
    const refused = () => ({ ready: false, detail: this.roleGate.refusedDetail });
    if (this.roleGate.refused) return refused();
    try {
      await this.transaction(serverCall(2_000), async (client) => {
        await client.query('SELECT 1');
      });
      return { ready: true };
    } catch (error) {
      // The probe may have run the role check for the first time.
      if (this.roleGate.refused) return refused();
      this.logger.debug({ err: error }, 'readiness check failed');
      return { ready: false, detail: 'PostgreSQL is unreachable' };
    }
  }

  /** Closes the pool (on shutdown). */
  async close(): Promise<void> {
    await this.pool.end();
  }
}
