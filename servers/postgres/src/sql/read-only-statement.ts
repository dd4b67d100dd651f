import type { Connection, FieldDef, Submittable } from 'pg';
import type { CappedRows } from './execute.js';

/**
 * One checked statement in its own read-only transaction, in ONE round trip: every message is
 * written at once (extended protocol, a single Sync at the end) and PostgreSQL answers them in
 * order.
 *
 *   BEGIN READ ONLY
 *   SELECT set_config(search_path, lock_timeout, statement_timeout, idle timeout,
 *                     gatehouse.principal, and — with a role map — role and the claims; all LOCAL)
 *   the statement: Parse / Bind / Describe / Execute (row cap + 1)      ← one statement only
 *   the identity check: still the call's role and settings? (with the session check)
 *   ROLLBACK
 *   the session check (what a function could leave behind past ROLLBACK), unless the catalog
 *     rules showed the statement runs only built-in functions that are not volatile
 *   Sync
 *
 * The guarantees of the five-round-trip version hold: an error anywhere makes PostgreSQL skip
 * every message up to the Sync, so nothing runs outside the read-only transaction (and the
 * connection is then destroyed, as after any error). The settings statement takes the
 * transaction's snapshot, after which SET TRANSACTION READ WRITE is refused. statement_timeout
 * applies per Execute (PostgreSQL ≥ 14 re-arms it for each), so the statement gets this call's
 * value. The Execute asks for at most cap + 1 rows (PortalSuspended, and ROLLBACK closes the
 * portal): a large result is never fetched whole. Rows past the byte cap are not parsed, and
 * when more than the byte cap of them arrives the connection is dropped instead of read. A
 * statement that changed the role or a gatehouse setting (a function that switches role) is
 * found before its rows are handed out: the caller discards them (ADR 0027).
 */
export class ReadOnlyStatement implements Submittable {
  /**
   * The identity and session checks' answers ('' when clean), or `dropped` when the connection
   * was cut.
   */
  readonly done: Promise<{ dirty: string; changed: string } | { dropped: true }>;
  /** Whether PostgreSQL answered anything (a failure before that ran nothing). */
  answered = false;

  /** The statements sent, in order; `step` indexes the one PostgreSQL is answering. */
  private readonly steps: readonly StepKind[];
  private step = 0;
  private dirty: string | undefined;
  private changed: string | undefined;
  private discarded = 0;
  private dropped = false;
  private settle!: (value: { dirty: string; changed: string } | { dropped: true }) => void;
  private fail!: (error: Error) => void;
  private readonly session: CallSession;
  private readonly sql: string;
  private readonly params: readonly QueryParam[];
  private readonly rows: CappedRows;
  private connection: Connection | undefined;
  /** The fixed statements this round trip parses (prepared once it succeeds). */
  private readonly parsed: string[] = [];

  constructor(
    session: CallSession,
    sql: string,
    params: readonly QueryParam[],
    rows: CappedRows,
    sessionCheck: boolean,
  ) {
    this.steps = [
      'begin',
      'settings',
      'statement',
      ...(sessionCheck ? (['identity'] as const) : []),
      'rollback',
      ...(sessionCheck ? (['session'] as const) : []),
    ];
    this.session = session;
    this.sql = sql;
    this.params = params;
    this.rows = rows;
    this.done = new Promise((resolve, reject) => {
      this.settle = resolve;
      this.fail = reject;
    });
  }

  submit(connection: Connection): void {
    const wire = connection as unknown as Wire;
    const values = this.params.map(paramText);
    const fixed = fixedStatements(connection, this.parsed);
    const { statements } = this.session;
    connection.stream.cork();
    try {
      for (const kind of this.steps) {
        if (kind === 'begin') fixed('gatehouse_begin', 'BEGIN READ ONLY');
        else if (kind === 'settings') {
          fixed('gatehouse_settings', statements.settings, this.session.settings);
        } else if (kind === 'statement') {
          wire.parse({ text: this.sql });
          wire.bind({ values });
          wire.describe({ type: 'P', name: '' });
          wire.execute({ rows: this.rows.caps.maxRows + 1 });
        } else if (kind === 'identity') {
          fixed('gatehouse_identity', statements.identity, this.session.identity);
        } else if (kind === 'rollback') fixed('gatehouse_rollback', 'ROLLBACK');
        else fixed('gatehouse_session_check', SESSION_CHECK);
      }
      wire.sync();
    } finally {
      connection.stream.uncork();
    }
    this.connection = connection;
  }

  handleRowDescription(message: { fields: FieldDef[] }): void {
    this.answered = true;
    if (this.steps[this.step] === 'statement') this.rows.describe(message.fields);
  }

  handleDataRow(message: { fields: Array<string | null> }): void {
    this.answered = true;
    const kind = this.steps[this.step];
    if (kind === 'statement') {
      if (this.rows.add(message.fields)) return;
      for (const value of message.fields) this.discarded += value?.length ?? 0;
      if (this.discarded > this.rows.caps.maxBytes && !this.dropped) {
        // Past the byte cap and still coming: stop reading instead of draining it.
        this.dropped = true;
        this.connection?.stream.destroy();
      }
    } else if (kind === 'identity') {
      this.changed = message.fields[0] ?? '';
    } else if (kind === 'session') {
      this.dirty = message.fields[0] ?? '';
    }
  }

  handleCommandComplete(): void {
    this.answered = true;
    this.step++;
  }

  handlePortalSuspended(): void {
    this.answered = true;
    this.step++;
  }

  handleEmptyQuery(): void {
    this.answered = true;
    this.step++;
  }

  handleCopyInResponse(connection: Connection): void {
    (connection as unknown as Wire).sendCopyFail('COPY is not allowed');
  }

  handleCopyData(): void {}

  handleError(error: Error): void {
    if (this.dropped) this.settle({ dropped: true });
    else this.fail(error);
  }

  handleReadyForQuery(): void {
    if (this.step === this.steps.length) {
      if (this.connection !== undefined) remember(this.connection, this.parsed);
      this.settle({ dirty: this.dirty ?? '', changed: this.changed ?? '' });
    } else {
      this.fail(new Error(`PostgreSQL answered ${this.step} of ${this.steps.length} statements`));
    }
  }
}

/** The statements of one round trip, in the order they are sent. */
type StepKind = 'begin' | 'settings' | 'statement' | 'identity' | 'rollback' | 'session';

/** The fixed statements of a database's calls (their text depends on its role map only). */
export interface CallStatements {
  /** `SELECT set_config(…)` of every setting, its values as $1, $2, … */
  readonly settings: string;
  /** What of the call's role and settings changed since they were set ('' when none). */
  readonly identity: string;
}

/** One call's values of the {@link CallStatements}. */
export interface CallSession {
  readonly statements: CallStatements;
  readonly settings: readonly string[];
  readonly identity: readonly string[];
}

/**
 * Runs a fixed statement of this round trip: parsed and planned once per connection (named),
 * then only bound. A name parsed now goes to `parsed`, remembered once the round trip succeeds.
 */
function fixedStatements(connection: Connection, parsed: string[]) {
  const wire = connection as unknown as Wire;
  const prepared = PREPARED.get(connection);
  return (name: string, text: string, values?: ReadonlyArray<string | null>): void => {
    if (prepared?.has(name) !== true && !parsed.includes(name)) {
      parsed.push(name);
      wire.parse({ name, text });
    }
    wire.bind({ statement: name, ...(values === undefined ? {} : { values }) });
    wire.execute({});
  };
}

/** Notes the fixed statements a successful round trip prepared on `connection`. */
function remember(connection: Connection, parsed: readonly string[]): void {
  if (parsed.length === 0) return;
  const prepared = PREPARED.get(connection) ?? new Set<string>();
  for (const name of parsed) prepared.add(name);
  PREPARED.set(connection, prepared);
}

/** A parameter value of a statement (`$1`, `$2`, …), sent as text; a list as an array literal. */
export type QueryParam =
  string | number | boolean | null | ReadonlyArray<string | number | boolean | null>;

/**
 * A value as the text PostgreSQL reads for it: a list becomes a one-dimensional array literal,
 * every element quoted (backslash and double quote escaped), NULL unquoted — `{"a","b\\"c",NULL}`.
 */
export function paramText(value: QueryParam): string | null {
  if (value === null) return null;
  if (!Array.isArray(value)) return String(value);
  const items = (value as ReadonlyArray<string | number | boolean | null>).map((v) =>
    v === null ? 'NULL' : `"${String(v).replace(/[\\"]/g, (c) => `\\${c}`)}"`,
  );
  return `{${items.join(',')}}`;
}

/** Connections whose fixed statements are prepared (a failure destroys the connection). */
const PREPARED = new WeakMap<Connection, Set<string>>();

/** The protocol writes of pg's Connection (typed loosely in @types/pg). */
interface Wire {
  parse(query: { text: string; name?: string }): void;
  bind(config: { statement?: string; values?: ReadonlyArray<string | null> }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(config: { rows?: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

/**
 * The fixed statements of a database's calls: the settings — $1 search_path, $2 lock, $3
 * statement and $4 idle timeout, $5 `gatehouse.principal`, and with a role map $6 the role and
 * $7… the listed claims (`gatehouse.claim.<name>`) — and the identity check, which names what
 * of them a statement changed: the role ($1; `none` expects the login role), the principal ($2),
 * each claim ($3…). Every setting is LOCAL: ROLLBACK ends them all.
 */
export function callStatements(options: {
  role: boolean;
  claims: readonly string[];
}): CallStatements {
  const claims = options.claims.map((name, i) => ({ setting: `gatehouse.claim.${name}`, i }));
  const settings = [
    `SELECT pg_catalog.set_config('search_path', $1, true)`,
    `pg_catalog.set_config('lock_timeout', $2, true)`,
    `pg_catalog.set_config('statement_timeout', $3, true)`,
    `pg_catalog.set_config('idle_in_transaction_session_timeout', $4, true)`,
    `pg_catalog.set_config('gatehouse.principal', $5, true)`,
    ...(options.role ? [`pg_catalog.set_config('role', $6, true)`] : []),
    ...claims.map(({ setting, i }) => `pg_catalog.set_config('${setting}', $${i + 7}, true)`),
  ].join(',\n  ');
  const identity = `SELECT pg_catalog.concat_ws(', ',
  CASE WHEN current_user <> (CASE WHEN $1 = 'none' THEN session_user ELSE $1::name END) THEN 'role' END,
  CASE WHEN pg_catalog.current_setting('gatehouse.principal', true) IS DISTINCT FROM $2 THEN 'gatehouse.principal' END${claims
    .map(
      ({ setting, i }) =>
        `,\n  CASE WHEN pg_catalog.current_setting('${setting}', true) IS DISTINCT FROM $${i + 3} THEN '${setting}' END`,
    )
    .join('')}
) AS changed`;
  return { settings, identity };
}

/**
 * The session-state check after ROLLBACK. What a call can leave past ROLLBACK is what
 * PostgreSQL does not undo with the transaction: session advisory locks and SQL-level prepared
 * statements. SET / set_config, SET ROLE, cursors, LISTEN and temporary objects are
 * transactional and roll back (the execution tests show it), so for them a cheap guard against
 * the unexpected is enough: the read-only default (reading `pg_settings` for every
 * session-level setting cost ~0.65 ms a call), open cursors (named: the unnamed portal is the
 * check's own, run through the extended protocol), channels, temporary objects and the role.
 */
export const SESSION_CHECK = `SELECT pg_catalog.concat_ws(', ',
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE pid = pg_catalog.pg_backend_pid() AND locktype = 'advisory') THEN 'advisory locks' END,
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_prepared_statements WHERE from_sql OR name NOT IN ('gatehouse_reached_functions', 'gatehouse_relations', 'gatehouse_lookup_types', 'gatehouse_begin', 'gatehouse_settings', 'gatehouse_identity', 'gatehouse_rollback', 'gatehouse_session_check')) THEN 'prepared statements' END,
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_cursors WHERE name <> '') THEN 'open cursors' END,
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_listening_channels()) THEN 'LISTEN channels' END,
  CASE WHEN pg_catalog.current_setting('default_transaction_read_only') <> 'on' THEN 'changed settings' END,
  CASE WHEN pg_catalog.pg_my_temp_schema() <> 0 AND EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relnamespace = pg_catalog.pg_my_temp_schema()) THEN 'temporary objects' END,
  CASE WHEN current_user <> session_user THEN 'another role' END
) AS dirty`;

/**
 * The types PostgreSQL infers for a statement's parameters (`$1`, `$2`, …), asked before any value
 * is bound: Parse and Describe of the unnamed statement, then Sync — nothing runs, no value is
 * looked up. A parameter whose type reads a text as a catalog name (`'employees'::regclass = $1`
 * makes `$1` a regclass) would look its value up when bound. With a `session`, in the call's
 * read-only transaction, as its role (what a name resolves to depends on the schemas the role
 * may use): BEGIN READ ONLY, the settings, Parse and Describe, ROLLBACK — still one round trip.
 */
export class ParameterTypes implements Submittable {
  readonly done: Promise<readonly number[]>;
  private types: readonly number[] = [];
  private failed: Error | undefined;
  private settle!: (types: readonly number[]) => void;
  private fail!: (error: Error) => void;
  private readonly sql: string;
  private readonly session: CallSession | undefined;
  private connection: Connection | undefined;
  private readonly parsed: string[] = [];
  private readonly listener = (message: { dataTypeIDs: number[] }): void => {
    this.types = message.dataTypeIDs;
  };

  constructor(sql: string, session?: CallSession) {
    this.sql = sql;
    this.session = session;
    this.done = new Promise((resolve, reject) => {
      this.settle = resolve;
      this.fail = reject;
    });
  }

  submit(connection: Connection): void {
    const wire = connection as unknown as Wire & {
      describe(message: { type: 'S' | 'P'; name: string }): void;
    };
    this.connection = connection;
    const fixed = fixedStatements(connection, this.parsed);
    connection.once('parameterDescription', this.listener);
    connection.stream.cork();
    try {
      if (this.session !== undefined) {
        fixed('gatehouse_begin', 'BEGIN READ ONLY');
        fixed('gatehouse_settings', this.session.statements.settings, this.session.settings);
      }
      wire.parse({ text: this.sql });
      wire.describe({ type: 'S', name: '' });
      if (this.session !== undefined) fixed('gatehouse_rollback', 'ROLLBACK');
      wire.sync();
    } finally {
      connection.stream.uncork();
    }
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handlePortalSuspended(): void {}
  handleEmptyQuery(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}

  handleError(error: Error): void {
    this.failed = error;
  }

  handleReadyForQuery(): void {
    this.connection?.removeListener('parameterDescription', this.listener);
    if (this.failed !== undefined) this.fail(this.failed);
    else {
      if (this.connection !== undefined) remember(this.connection, this.parsed);
      this.settle(this.types);
    }
  }
}
