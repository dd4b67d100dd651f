import type { Connection, FieldDef, Submittable } from 'pg';
import type { CappedRows } from './execute.js';

/**
 * One checked statement in its own read-only transaction, in ONE round trip: every message is
 * written at once (extended protocol, a single Sync at the end) and PostgreSQL answers them in
 * order.
 *
 *   BEGIN READ ONLY
 *   SELECT set_config(search_path, lock_timeout, statement_timeout, idle timeout — all LOCAL)
 *   the statement: Parse / Bind / Describe / Execute (row cap + 1)      ← one statement only
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
 * when more than the byte cap of them arrives the connection is dropped instead of read.
 */
export class ReadOnlyStatement implements Submittable {
  /** The session check's answer ('' when clean), or `dropped` when the connection was cut. */
  readonly done: Promise<{ dirty: string } | { dropped: true }>;
  /** Whether PostgreSQL answered anything (a failure before that ran nothing). */
  answered = false;

  private step: number = Step.Begin;
  /** The step after the last statement sent. */
  private readonly last: number;
  private dirty: string | undefined;
  private discarded = 0;
  private dropped = false;
  private settle!: (value: { dirty: string } | { dropped: true }) => void;
  private fail!: (error: Error) => void;
  private readonly settings: readonly string[];
  private readonly sql: string;
  private readonly params: readonly QueryParam[];
  private readonly rows: CappedRows;
  private readonly sessionCheck: boolean;
  private connection: Connection | undefined;
  /** The fixed statements this round trip parses (prepared once it succeeds). */
  private readonly parsed: string[] = [];

  constructor(
    settings: readonly string[],
    sql: string,
    params: readonly QueryParam[],
    rows: CappedRows,
    sessionCheck: boolean,
  ) {
    this.sessionCheck = sessionCheck;
    this.last = sessionCheck ? Step.Done : Step.SessionCheck;
    this.settings = settings;
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
    // The fixed statements are parsed and planned once per connection, then only bound.
    const prepared = PREPARED.get(connection);
    const run = (
      name: string,
      text: string,
      bind: { values?: ReadonlyArray<string | null> } = {},
    ) => {
      if (prepared?.has(name) !== true) {
        this.parsed.push(name);
        wire.parse({ name, text });
      }
      wire.bind({ statement: name, ...bind });
      wire.execute({});
    };
    connection.stream.cork();
    try {
      run('gatehouse_begin', 'BEGIN READ ONLY');
      run('gatehouse_settings', SETTINGS, { values: this.settings });
      wire.parse({ text: this.sql });
      wire.bind({ values });
      wire.describe({ type: 'P', name: '' });
      wire.execute({ rows: this.rows.caps.maxRows + 1 });
      run('gatehouse_rollback', 'ROLLBACK');
      if (this.sessionCheck) run('gatehouse_session_check', SESSION_CHECK);
      wire.sync();
    } finally {
      connection.stream.uncork();
    }
    this.connection = connection;
  }

  handleRowDescription(message: { fields: FieldDef[] }): void {
    this.answered = true;
    if (this.step === Step.Statement) this.rows.describe(message.fields);
  }

  handleDataRow(message: { fields: Array<string | null> }): void {
    this.answered = true;
    if (this.step === Step.Statement) {
      if (this.rows.add(message.fields)) return;
      for (const value of message.fields) this.discarded += value?.length ?? 0;
      if (this.discarded > this.rows.caps.maxBytes && !this.dropped) {
        // Past the byte cap and still coming: stop reading instead of draining it.
        this.dropped = true;
        this.connection?.stream.destroy();
      }
    } else if (this.step === Step.SessionCheck) {
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
    if (this.step === this.last) {
      if (this.connection !== undefined && this.parsed.length > 0) {
        const prepared = PREPARED.get(this.connection) ?? new Set<string>();
        for (const name of this.parsed) prepared.add(name);
        PREPARED.set(this.connection, prepared);
      }
      this.settle({ dirty: this.dirty ?? '' });
    } else this.fail(new Error(`PostgreSQL answered ${this.step} of ${this.last} statements`));
  }
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

/** Which of the pipelined statements PostgreSQL is answering. */
const Step = {
  Begin: 0,
  Settings: 1,
  Statement: 2,
  Rollback: 3,
  SessionCheck: 4,
  Done: 5,
} as const;

/** The protocol writes of pg's Connection (typed loosely in @types/pg). */
interface Wire {
  parse(query: { text: string; name?: string }): void;
  bind(config: { statement?: string; values?: ReadonlyArray<string | null> }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(config: { rows?: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

/** This call's transaction settings ($1 search_path, $2 lock, $3 statement, $4 idle timeout). */
const SETTINGS = `SELECT pg_catalog.set_config('search_path', $1, true),
  pg_catalog.set_config('lock_timeout', $2, true),
  pg_catalog.set_config('statement_timeout', $3, true),
  pg_catalog.set_config('idle_in_transaction_session_timeout', $4, true)`;

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
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_prepared_statements WHERE from_sql OR name NOT IN ('gatehouse_reached_functions', 'gatehouse_relations', 'gatehouse_lookup_types', 'gatehouse_begin', 'gatehouse_settings', 'gatehouse_rollback', 'gatehouse_session_check')) THEN 'prepared statements' END,
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
 * makes `$1` a regclass) would look its value up when bound.
 */
export class ParameterTypes implements Submittable {
  readonly done: Promise<readonly number[]>;
  private types: readonly number[] = [];
  private failed: Error | undefined;
  private settle!: (types: readonly number[]) => void;
  private fail!: (error: Error) => void;
  private readonly sql: string;
  private connection: Connection | undefined;
  private readonly listener = (message: { dataTypeIDs: number[] }): void => {
    this.types = message.dataTypeIDs;
  };

  constructor(sql: string) {
    this.sql = sql;
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
    connection.once('parameterDescription', this.listener);
    connection.stream.cork();
    try {
      wire.parse({ text: this.sql });
      wire.describe({ type: 'S', name: '' });
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
    else this.settle(this.types);
  }
}
