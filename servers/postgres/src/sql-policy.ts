import { SqlRefusedError } from './sql-guard.js';
import type { QualifiedName, SqlAnalysis } from './sql-guard.js';

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

/** Volatile built-ins that only read a clock or a random source. */
const HARMLESS_VOLATILE = new Set([
  'random',
  'random_normal',
  'clock_timestamp',
  'timeofday',
  'gen_random_uuid',
  'uuidv4',
  'uuidv7',
]);

/** What the rules need from the server configuration. */
export interface SqlPolicyOptions {
  /** The schemas tools may see and query, in search order. */
  readonly schemas: readonly string[];
  /** Volatile functions the operator allows (`name` or `schema.name`). */
  readonly allowFunctions: readonly string[];
}

/** A masked column as resolved from the catalog. */
export interface MaskedColumn {
  readonly schema: string;
  readonly table: string;
  readonly column: string;
  readonly tableOid: number;
  readonly attnum: number;
}

/** The catalog facts the rules ask the database for (cached by the caller). */
export interface CatalogLookup {
  /** For each `schema.name` found (schemas searched: pg_catalog + the allowed ones): any overload VOLATILE? */
  functionVolatility(names: readonly string[]): Promise<ReadonlyMap<string, boolean>>;
  /** Same for operators (the volatility of their implementing functions). */
  operatorVolatility(names: readonly string[]): Promise<ReadonlyMap<string, boolean>>;
  /** Every masked column in the allowed schemas. */
  maskedColumns(): Promise<readonly MaskedColumn[]>;
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
  for (const fn of analysis.functions) {
    const name = fn.name.toLowerCase();
    for (const [pattern, why] of DENIED) {
      if (pattern.test(name)) {
        throw new SqlRefusedError('function_denied', `${display(fn)}() is not allowed: ${why}.`);
      }
    }
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
  for (const rel of analysis.relations) {
    if (rel.schema !== undefined && !allowed.has(rel.schema)) {
      throw new SqlRefusedError(
        SYSTEM_SCHEMAS.has(rel.schema) || rel.schema.startsWith('pg_')
          ? 'system_catalog'
          : 'schema_not_allowed',
        `${display(rel)} is outside the allowed schemas (${options.schemas.join(', ')}). Use postgres_list_tables to see what is available.`,
      );
    }
    if (rel.schema === undefined && rel.name.startsWith('pg_') && !allowed.has('pg_catalog')) {
      throw new SqlRefusedError(
        'system_catalog',
        `${rel.name} is a system catalog, outside the allowed schemas. Use postgres_list_tables and postgres_describe_table for metadata.`,
      );
    }
  }
}

/** The names a function may be allowed by: `name` and `schema.name`. */
function isAllowedFunction(fn: string, allow: readonly string[]): boolean {
  const name = fn.split('.').at(-1)!;
  return allow.includes(fn) || allow.includes(name);
}

/**
 * The catalog rules: volatile functions and operators (refused unless harmless or allowed),
 * then masking. Returns the masked columns the query touches (for the result filter).
 */
export async function checkCatalog(
  analysis: SqlAnalysis,
  options: SqlPolicyOptions,
  catalog: CatalogLookup,
): Promise<readonly MaskedColumn[]> {
  const searched = ['pg_catalog', ...options.schemas];
  const candidates = (name: QualifiedName): string[] =>
    name.schema === undefined
      ? searched.map((s) => `${s}.${name.name}`)
      : [`${name.schema}.${name.name}`];

  const fnKeys = [...new Set(analysis.functions.flatMap(candidates))];
  if (fnKeys.length > 0) {
    const volatile = await catalog.functionVolatility(fnKeys);
    for (const fn of analysis.functions) {
      const hit = candidates(fn).find((key) => volatile.get(key) === true);
      if (hit === undefined) continue;
      const bare = fn.name.toLowerCase();
      if (hit.startsWith('pg_catalog.') && HARMLESS_VOLATILE.has(bare)) continue;
      if (isAllowedFunction(hit, options.allowFunctions)) continue;
      throw new SqlRefusedError(
        'function_volatile',
        `${hit}() is VOLATILE (it may change data or state) and is not on this server's allow-list (POSTGRES_ALLOW_FUNCTIONS).`,
      );
    }
  }
  const opKeys = [...new Set(analysis.operators.flatMap(candidates))];
  if (opKeys.length > 0) {
    const volatile = await catalog.operatorVolatility(opKeys);
    for (const op of analysis.operators) {
      const hit = candidates(op).find((key) => volatile.get(key) === true);
      if (hit !== undefined) {
        throw new SqlRefusedError(
          'operator_volatile',
          `operator ${hit} is implemented by a VOLATILE function (it may change data or state).`,
        );
      }
    }
  }
  const masked = await catalog.maskedColumns();
  if (masked.length === 0) return [];
  const touched = masked.filter((m) =>
    analysis.relations.some(
      (r) => r.name === m.table && (r.schema === undefined || r.schema === m.schema),
    ),
  );
  checkMasking(analysis, touched);
  return touched;
}

/**
 * Masking, refuse side: a masked column may appear only as a plain column (or star) in the
 * outermost SELECT list, where PostgreSQL reports its origin and the value is replaced. Used
 * anywhere else — a filter, a join, a sort, a function argument, a subquery, a whole-row
 * reference — it could leak the value through the result, so the query is refused.
 */
export function checkMasking(analysis: SqlAnalysis, touched: readonly MaskedColumn[]): void {
  if (touched.length === 0) return;
  const names = new Set(touched.map((m) => m.column));
  const list = [...new Set(touched.map((m) => `${m.schema}.${m.table}.${m.column}`))].join(', ');
  const refuse = (what: string): never => {
    throw new SqlRefusedError(
      'masked_column',
      `${what}. Masked columns (${list}) may only be listed plainly in the outermost SELECT (their values come back masked); they cannot be filtered, joined, sorted, grouped, aggregated, transformed or read through a subquery.`,
    );
  };
  for (const aliasTarget of analysis.topAliases) {
    if (names.has(aliasTarget[1])) names.add(aliasTarget[0]);
  }
  for (const ref of analysis.columns) {
    const last = ref.fields.at(-1)!;
    if (last === '*') {
      if (!ref.topLevel) refuse(`${ref.fields.join('.')} below the outermost SELECT list`);
      continue;
    }
    if (ref.fields.length === 1 && analysis.rowNames.has(last) && !names.has(last)) {
      refuse(`the whole-row reference ${last} would include masked columns`);
    }
    if (names.has(last) && !ref.topLevel)
      refuse(`${ref.fields.join('.')} is used in an expression`);
  }
  for (const column of analysis.usingColumns) {
    if (names.has(column)) refuse(`JOIN … USING (${column}) compares a masked column`);
  }
  if (analysis.naturalJoin) refuse('a NATURAL JOIN compares same-named (possibly masked) columns');
  for (const position of analysis.topPositions) {
    // A star before the position hides which column it is; otherwise look at the column.
    const upTo = analysis.topTargets.slice(0, position);
    const target = analysis.topTargets[position - 1];
    if (upTo.includes('*') || (target !== null && target !== undefined && names.has(target))) {
      refuse(`ORDER BY/GROUP BY ${position} sorts or groups by a masked column`);
    }
  }
}
