import { relationKey } from './resolve.js';
import type { Resolution } from './resolve.js';
import { SqlRefusedError, analyzeSql } from './guard.js';
import { checkSizes } from './sizes.js';
import type { NameLookup, QualifiedName, SqlAnalysis } from './guard.js';

export type { MaskedColumn } from './resolve.js';

/**
 * The function, schema and masking rules applied to a parsed statement (layer 2, after the
 * statement shape). Functions are judged twice: by name against the denied list below (no
 * catalog needed, so `SELECT * FROM pg_read_file(…)` never reaches the database), then by
 * volatility in `pg_catalog.pg_proc`: a VOLATILE function may have side effects, so unknown
 * volatile functions are refused unless the operator allows them by name.
 */

/** Functions refused whatever the configuration, with the reason the model is told. */
const DENIED: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /^(?:pg_read_file|pg_read_binary_file|pg_stat_file|pg_current_logfile|pg_logdir_ls)$|^pg_ls_|^pg_file_/,
    'it reads or writes files on the database server',
  ],
  [/^lo_|^lo(?:read|write)$/, 'large-object functions read and write server files and storage'],
  [
    /^dblink|^postgres_fdw_/,
    'it opens a connection to a database outside this read-only transaction',
  ],
  [
    /^(?:set_config|pg_reload_conf|pg_rotate_logfile|pg_log_backend_memory_contexts|pg_log_standby_snapshot)$/,
    'it changes server or session settings',
  ],
  [/^pg_(?:try_)?advisory_/, 'it takes advisory locks'],
  [/^(?:nextval|setval)$/, 'it changes a sequence'],
  [/^pg_(?:cancel|terminate|signal)_backend$/, 'it signals other sessions'],
  [/^pg_notify$/, 'it sends notifications to other sessions'],
  [/^pg_sleep/, 'it only holds a connection; queries run under a statement timeout'],
  [
    /^(?:query|table|schema|database|cursor)_to_xml|^ts_stat$|^ts_rewrite$|^crosstab|^connectby$/,
    'it runs SQL given as text, which this check cannot see',
  ],
  [/^pg_import_system_collations$/, 'it creates collations'],
  [
    /^pg_(?:create|drop|copy)_\w*(?:replication_slot|restore_point)$|^pg_replication_|^pg_logical_/,
    'it changes replication state',
  ],
  [
    /^pg_(?:switch_wal|promote|backup_start|backup_stop|start_backup|stop_backup|wal_replay_|checkpoint)/,
    'it controls the server',
  ],
  [/^pg_stat_reset|^pg_stat_statements_reset$/, 'it resets statistics'],
  [/^pg_prewarm$/, 'it loads data into the buffer cache'],
  [/^(?:txid_current|pg_current_xact_id)$/, 'it assigns a transaction id'],
];

/**
 * The functions behind the system views the schema rule refuses (pg_stat_activity, pg_locks,
 * pg_settings, pg_hba_file_rules, pg_prepared_statements…): called directly they show what the
 * view would, so they are refused like it — unless pg_catalog is an allowed schema. So are the
 * sizes of a whole database or tablespace (they measure the hidden schemas too) and the names of
 * roles by oid, and access lists (`pg_get_acl`), which name roles.
 */
const SYSTEM_VIEW_FUNCTIONS =
  /^(?:pg_stat_get_\w+|pg_stat_have_stats|pg_lock_status|pg_blocking_pids|pg_safe_snapshot_blocking_pids|pg_show_all_settings|pg_show_all_file_settings|pg_hba_file_rules|pg_ident_file_mappings|pg_config|pg_cursor|pg_prepared_statement|pg_prepared_xact|pg_get_backend_memory_contexts|pg_get_shmem_allocations(?:_numa)?|pg_get_aios|pg_get_wait_events|pg_get_replication_slots|pg_get_publication_tables|pg_show_replication_origin_status|pg_available_extensions|pg_available_extension_versions|pg_mcv_list_items|pg_get_catalog_foreign_keys|pg_get_userbyid|pg_get_acl|pg_database_size|pg_tablespace_size|pg_control_\w+|pg_get_wal_\w+|pg_walfile_name\w*|pg_current_wal_\w+|pg_last_wal_\w+|pg_stat_statements\w*)$/;

/**
 * Volatile built-ins judged by what they do, not by their label: they only read a clock or a
 * random source, sample a table, or read a relation's size on disk (PostgreSQL labels the size
 * functions VOLATILE because a size changes under concurrent writes; they change nothing, and
 * the relation they measure is a name lookup, held to the allowed schemas like any other).
 */
const HARMLESS_VOLATILE = new Set([
  'bernoulli',
  'system',
  'random',
  'random_normal',
  'clock_timestamp',
  'timeofday',
  'gen_random_uuid',
  'uuidv4',
  'uuidv7',
  'pg_relation_size',
  'pg_table_size',
  'pg_indexes_size',
  'pg_total_relation_size',
]);

/** What the rules need from the server configuration. */
export interface SqlPolicyOptions {
  /** The schemas tools may see and query, in search order. */
  readonly schemas: readonly string[];
  /** Volatile functions the operator allows (`name` or `schema.name`). */
  readonly allowFunctions: readonly string[];
  /** The largest value a statement may build from its constants (sizes.ts); none: unchecked. */
  readonly maxValueBytes?: number;
  /**
   * Refuse every reached function that could switch the role or a gatehouse setting (with a
   * role map: ADR 0027). Without one every call runs as the login role, whose reachable roles
   * the start checked.
   */
  readonly refuseRoleSwitches?: boolean;
}

/**
 * The catalog objects a statement names, each as the candidates it may resolve to (keys of
 * `relationKey(schema, name)`: a quoted name may contain a dot).
 */
export interface StatementObjects {
  readonly functions: readonly string[];
  /** Functions a column reference may call in functional notation (`t.f` for `f(t)`). */
  readonly columnFunctions: readonly string[];
  readonly operators: readonly string[];
  readonly relations: readonly string[];
  readonly types: readonly string[];
}

/** A function PostgreSQL may run for a statement, and how the statement reaches it. */
export interface ReachedFunction {
  readonly schema: string;
  readonly name: string;
  /** `schema.name(argument types)`, for messages. */
  readonly signature: string;
  readonly volatile: boolean;
  /** SECURITY DEFINER: runs with its owner's rights. */
  readonly definer: boolean;
  /** Why it could switch the role or a gatehouse setting mid-statement (null: it cannot). */
  readonly switches: string | null;
  /**
   * `call` (named in the SQL), `column notation` (maybe called as `t.f`), `operator`, `cast`,
   * `domain constraint`, `domain default`, `aggregate support`, `type input/output`, `view`,
   * `row security policy`, `generated column`.
   */
  readonly via: string;
}

/** What a statement reaches in the catalog: functions, and the views it reads with their SQL. */
export interface Reached {
  readonly functions: ReachedFunction[];
  readonly views: Array<{
    readonly schema: string;
    readonly name: string;
    readonly definition: string;
  }>;
  /** Foreign tables it reads (their wrapper's code runs). */
  readonly foreign: Array<{ readonly schema: string; readonly name: string }>;
  /**
   * The types it names whose input looks a text up in the catalog — a reg* type, or a domain,
   * array, row or range type built on one ({@link relationKey} keys).
   */
  readonly lookupTypes: string[];
}

/** The catalog facts the function rules ask the database for (cached by the caller). */
export interface CatalogLookup {
  /**
   * Every function PostgreSQL may run on the statement's behalf: those it calls, the functions
   * of its operators, the support functions of its aggregates, the casts between the types it
   * involves, the checks and defaults of its domains, type input/output, and what the views,
   * row-security policies and virtual generated columns it reads call — recursively.
   */
  reached(objects: StatementObjects): Promise<Reached>;
}

const SYSTEM_SCHEMAS = new Set(['pg_catalog', 'information_schema']);

function display(name: QualifiedName): string {
  return name.schema === undefined ? name.name : `${name.schema}.${name.name}`;
}

/**
 * The rules that need no catalog: denied functions (by name, in any schema, anywhere in the
 * statement), explicit schemas outside the allow-list, and unqualified system catalogs (which
 * PostgreSQL always searches first, whatever the search_path).
 */
export function checkStatic(analysis: SqlAnalysis, options: SqlPolicyOptions): void {
  const allowed = new Set(options.schemas);
  if (options.maxValueBytes !== undefined) checkSizes(analysis.select, options.maxValueBytes);
  for (const fn of analysis.functions) {
    const name = fn.name.toLowerCase();
    deniedByName(name, `${display(fn)}()`, allowed);
    if (fn.schema !== undefined && fn.schema !== 'pg_catalog' && !allowed.has(fn.schema)) {
      throw new SqlRefusedError(
        'schema_not_allowed',
        `${display(fn)}() is in schema "${fn.schema}", outside the allowed schemas (${options.schemas.join(', ')}).`,
      );
    }
  }
  for (const op of analysis.operators) {
    if (op.schema !== undefined && op.schema !== 'pg_catalog' && !allowed.has(op.schema)) {
      throw new SqlRefusedError(
        'schema_not_allowed',
        `operator ${display(op)} is in schema "${op.schema}", outside the allowed schemas.`,
      );
    }
  }
  for (const lookup of analysis.nameLookups) checkNameLookup(lookup, options.schemas);
  // A type in another schema: whether the cast succeeds would tell whether it exists (a hidden
  // table's row type, `NULL::hr.salaries`, is one).
  for (const type of analysis.types) {
    if (type.schema !== undefined && type.schema !== 'pg_catalog' && !allowed.has(type.schema)) {
      throw new SqlRefusedError(
        SYSTEM_SCHEMAS.has(type.schema) || type.schema.startsWith('pg_')
          ? 'system_catalog'
          : 'schema_not_allowed',
        `the type ${display(type)} is outside the allowed schemas (${options.schemas.join(', ')}).`,
      );
    }
  }
  // A qualified relation is never a CTE: its schema decides now. (Unqualified names are
  // resolved against the catalog: a CTE, pg_catalog, or an allowed schema.)
  for (const rel of analysis.relations) {
    if (rel.schema !== undefined && !allowed.has(rel.schema)) {
      throw new SqlRefusedError(
        SYSTEM_SCHEMAS.has(rel.schema) || rel.schema.startsWith('pg_')
          ? 'system_catalog'
          : 'schema_not_allowed',
        `${display(rel)} is outside the allowed schemas (${options.schemas.join(', ')}). Use postgres_list_tables to see what is available.`,
      );
    }
  }
}

/** Refuses a function by its name alone: the denied list, and what backs a refused system view. */
function deniedByName(name: string, shown: string, allowed: ReadonlySet<string>, via = ''): void {
  for (const [pattern, why] of DENIED) {
    if (pattern.test(name)) {
      throw new SqlRefusedError('function_denied', `${shown} is not allowed${via}: ${why}.`);
    }
  }
  if (SYSTEM_VIEW_FUNCTIONS.test(name) && !allowed.has('pg_catalog')) {
    throw new SqlRefusedError(
      'system_catalog',
      `${shown}${via} reads what a system view shows (server activity, locks, settings, statistics), outside the allowed schemas.`,
    );
  }
}

/** The parts of a name as PostgreSQL reads a text (`"My Schema".t`, `hr.f(int)`). */
function nameParts(text: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  let wasQuoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        current += '"';
        i++;
      } else if (c === '"') quoted = false;
      else current += c;
    } else if (c === '"') {
      quoted = true;
      wasQuoted = true;
    } else if (c === '.') {
      parts.push(wasQuoted ? current : current.trim().toLowerCase());
      current = '';
      wasQuoted = false;
    } else if (c === '(') break;
    else current += c;
  }
  parts.push(wasQuoted ? current : current.trim().toLowerCase());
  return parts;
}

/**
 * A name looked up in the catalog must not name a schema outside the allow-list: whether it
 * resolves or errors would tell whether the object exists. An unqualified name is looked up in
 * the allowed schemas (the search path) and pg_catalog only; an expression cannot be checked.
 */
function checkNameLookup(lookup: NameLookup, schemas: readonly string[]): void {
  if (lookup.role === true) {
    throw new SqlRefusedError(
      'name_lookup',
      `${lookup.via} looks a role up by its name; roles are not shown on this server (whether one exists is not answered either).`,
    );
  }
  if (lookup.byOid) {
    throw new SqlRefusedError(
      'name_lookup',
      `${lookup.via} looks a catalog object up by its oid; name it instead (in an allowed schema: ${schemas.join(', ')}), as a constant.`,
    );
  }
  if (lookup.value === undefined) {
    throw new SqlRefusedError(
      'name_lookup',
      `${lookup.via} looks a catalog object up by a name computed at run time; write the name as a constant (in an allowed schema: ${schemas.join(', ')}).`,
    );
  }
  // An array or a row of names in one text (`'{hr.t,u}'::regclass[]`): each element is looked up,
  // and a qualified one cannot be told apart from the text's punctuation — refused.
  if (/^\s*[({]/.test(lookup.value) && lookup.value.includes('.')) {
    throw new SqlRefusedError(
      'name_lookup',
      `${lookup.via} looks up a list of names given in one text; give each name on its own, as a constant (in an allowed schema: ${schemas.join(', ')}).`,
    );
  }
  const parts = nameParts(lookup.value);
  const schema =
    lookup.schema && parts.length === 1 ? parts[0] : parts.length >= 2 ? parts.at(-2) : undefined;
  if (schema === undefined || schemas.includes(schema)) return;
  throw new SqlRefusedError(
    schema === 'pg_catalog' || schema === 'information_schema' || schema.startsWith('pg_')
      ? 'system_catalog'
      : 'schema_not_allowed',
    `${lookup.via} of '${lookup.value.slice(0, 100)}' names schema "${schema}", outside the allowed schemas (${schemas.join(', ')}).`,
  );
}

/**
 * The functions a view's definition calls, parsed once per cached catalog answer (the view
 * objects live as long as their cache entry) instead of on every query that reads the view.
 */
const parsedViews = new WeakMap<Reached['views'][number], readonly QualifiedName[]>();
async function viewCalls(view: Reached['views'][number]): Promise<readonly QualifiedName[]> {
  let calls = parsedViews.get(view);
  if (calls === undefined) {
    calls = (await analyzeSql(view.definition, { allowExplainAnalyze: false })).functions;
    parsedViews.set(view, calls);
  }
  return calls;
}

/** The names a function may be allowed by: `name` and `schema.name`. */
function isAllowedFunction(fn: string, allow: readonly string[]): boolean {
  const name = fn.split('.').at(-1)!;
  return allow.includes(fn) || allow.includes(name);
}

/**
 * Every function the statement may run, from every name it spells (see {@link CatalogLookup}).
 */
export async function reachedBy(
  analysis: SqlAnalysis,
  options: SqlPolicyOptions,
  catalog: CatalogLookup,
): Promise<Reached> {
  const searched = ['pg_catalog', ...options.schemas];
  const candidates = (names: readonly QualifiedName[]): string[] => [
    ...new Set(
      names.flatMap((name) =>
        name.schema === undefined
          ? searched.map((s) => relationKey(s, name.name))
          : [relationKey(name.schema, name.name)],
      ),
    ),
  ];
  return catalog.reached({
    functions: candidates(analysis.functions),
    columnFunctions: candidates(analysis.columnFunctions.map((name) => ({ name }))),
    operators: candidates(analysis.operators),
    relations: candidates(analysis.relations),
    types: candidates(analysis.types),
  });
}

/**
 * The catalog rules: every function the statement may run — named, called in column notation,
 * or reached through an operator, an aggregate, a cast, a domain, a type, a view, a policy —
 * against the denied list, the system-view functions, volatility and SECURITY DEFINER (refused
 * unless the operator allows it by name). Returns whether the session check may be skipped.
 */
export async function checkCatalog(
  reached: Reached,
  resolution: Pick<Resolution, 'columnFunctions'>,
  options: SqlPolicyOptions,
  typedValues: SqlAnalysis['typedValues'] = [],
): Promise<CatalogVerdict> {
  const allowed = new Set(options.schemas);
  // A value given a type whose input looks names up (a domain over regclass, a row type with a
  // regrole attribute, …) is a name lookup like a cast to regclass — decided on what the type
  // resolves to in the catalog, not on how it is spelled.
  if (reached.lookupTypes.length > 0) {
    const lookupTypes = new Set(reached.lookupTypes);
    const searched = ['pg_catalog', ...options.schemas];
    for (const { type, lookup } of typedValues) {
      const keys =
        type.schema === undefined
          ? searched.map((s) => relationKey(s, type.name))
          : [relationKey(type.schema, type.name)];
      if (keys.some((key) => lookupTypes.has(key))) checkNameLookup(lookup, options.schemas);
    }
  }
  // What a view calls among the built-in functions is not in the catalog's dependencies (they
  // are pinned): its definition is parsed and its calls judged by name, like the query's own.
  // (Its schema references are the view owner's business: a view may expose another schema.)
  for (const view of reached.views) {
    for (const fn of await viewCalls(view)) {
      deniedByName(
        fn.name.toLowerCase(),
        `${display(fn)}()`,
        allowed,
        ` (reached through the view ${view.schema}.${view.name})`,
      );
    }
  }
  // A name after a dot is a function only where resolution found no such column.
  const called = new Set(resolution.columnFunctions);
  for (const fn of reached.functions) {
    if (fn.via === 'column notation' && !called.has(fn.name)) continue;
    const key = `${fn.schema}.${fn.name}`;
    const via = fn.via === 'call' ? '' : ` (reached through a ${fn.via})`;
    const shown = `${fn.signature.includes('.') ? '' : `${fn.schema}.`}${fn.signature}`;
    deniedByName(fn.name.toLowerCase(), shown, allowed, via);
    // Whatever the allow-list says: a call that could run as another caller (ADR 0027).
    if (options.refuseRoleSwitches === true && fn.switches !== null && fn.switches !== undefined) {
      throw new SqlRefusedError(
        'function_switches_role',
        `${shown}${via} could change who the statement runs as — ${fn.switches} — and read as another role or caller.`,
      );
    }
    const allowedByName = isAllowedFunction(key, options.allowFunctions);
    if (fn.volatile) {
      if (fn.schema === 'pg_catalog' && HARMLESS_VOLATILE.has(fn.name)) continue;
      if (allowedByName) continue;
      if (fn.via === 'operator') {
        throw new SqlRefusedError(
          'operator_volatile',
          `an operator of the query is implemented by ${shown}, which is VOLATILE (it may change data or state).`,
        );
      }
      throw new SqlRefusedError(
        'function_volatile',
        `${shown}${via} is VOLATILE (it may change data or state) and is not on this server's allow-list (POSTGRES_ALLOW_FUNCTIONS).`,
      );
    }
    if (fn.definer && fn.schema !== 'pg_catalog' && !allowedByName) {
      throw new SqlRefusedError(
        'function_definer',
        `${shown}${via} is SECURITY DEFINER: it runs with its owner's rights, not this server's read-only role, whatever its volatility label says. Allow it by name (POSTGRES_ALLOW_FUNCTIONS) only if its owner cannot write.`,
      );
    }
  }
  // The session check is skipped only when the statement is proven unable to leave state past
  // ROLLBACK (an advisory lock, a prepared statement…): everything it can run is a built-in,
  // non-volatile function (only a superuser can change those). The proof stands on the catalog
  // closure of every name the statement spells — CTE names and `t.f` candidates included, and
  // whatever resolution decided — so a view, a foreign table or owner code anywhere makes the
  // check run.
  const sessionSafe =
    reached.views.length === 0 &&
    reached.foreign.length === 0 &&
    reached.functions.every((fn) => fn.schema === 'pg_catalog' && !fn.volatile);
  return { sessionSafe };
}

/** What the catalog rules found of a statement they let through. */
export interface CatalogVerdict {
  /**
   * True when everything it can run is a built-in function that is not volatile: nothing it
   * does can outlive ROLLBACK, so the session check after it can be skipped.
   */
  readonly sessionSafe: boolean;
}
