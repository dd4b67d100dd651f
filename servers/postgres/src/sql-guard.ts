import { PolicyError } from '@gatehouse/core';
import { parse } from 'libpg-query';
import type { SelectStmt } from 'libpg-query';

/**
 * Layer 2 of the read-only guarantee: the real PostgreSQL parser (libpg-query, the server's own
 * grammar compiled to WebAssembly) decides what a statement is. Text filters are not used: a
 * comment, a dollar-quote or a quoted identifier defeats them (pgEdge #196).
 */

/** Why a statement was refused; the rule names are stable (docs/security.md, tests, audit). */
export type SqlRule =
  | 'syntax'
  | 'single_statement'
  | 'statement_type'
  | 'data_modifying'
  | 'select_into'
  | 'locking_clause'
  | 'explain_analyze'
  | 'function_denied'
  | 'function_volatile'
  | 'function_definer'
  | 'operator_volatile'
  | 'name_lookup'
  | 'schema_not_allowed'
  | 'system_catalog'
  | 'masked_column'
  | 'unresolved_reference';

/**
 * A statement the guard refused; the message names the rule and what to do instead. Audited as
 * `denied` with the rule `sql:<rule>`.
 */
export class SqlRefusedError extends PolicyError {
  readonly sqlRule: SqlRule;
  constructor(sqlRule: SqlRule, message: string) {
    super(`sql:${sqlRule}`, `Refused by the read-only SQL policy (rule ${sqlRule}): ${message}`, {
      code: 'sql_refused',
    });
    this.sqlRule = sqlRule;
  }
}

/** A possibly schema-qualified name as written (the parser has already folded case). */
export interface QualifiedName {
  readonly schema?: string;
  readonly name: string;
}

/**
 * A text that PostgreSQL resolves to a catalog object by name — a cast to `regclass` and the other
 * reg* types, `to_regclass()` and its siblings, a function that takes an object's name or oid:
 * whether it resolves (or errors) tells whether the object exists, and what it returns describes
 * it, so its schema must be an allowed one — and it must be a name, not an oid (an oid names no
 * schema: counting through them would reach every object of the database).
 */
export interface NameLookup {
  /** What looks the name up, for the message (`::regclass`, `to_regclass()`). */
  readonly via: string;
  /** The constant text looked up; undefined when it is an expression (unknown until run). */
  readonly value: string | undefined;
  /** Whether the object is given by its oid (a number) instead of its name. */
  readonly byOid: boolean;
  /** Whether the text names a schema itself (`::regnamespace`, `has_schema_privilege()`). */
  readonly schema: boolean;
}

/** What one accepted statement contains. */
export interface SqlAnalysis {
  readonly kind: 'select' | 'explain';
  /** For EXPLAIN: whether it has ANALYZE (it then runs the query). */
  readonly analyze: boolean;
  /** The statement text without a trailing semicolon or trailing comment. */
  readonly statement: string;
  /** The query itself (the SELECT, or the SELECT an EXPLAIN explains), for name resolution. */
  readonly select: SelectStmt;
  readonly functions: readonly QualifiedName[];
  /**
   * The last name of every qualified column reference (`t.f`): when `t` has no column `f`,
   * PostgreSQL calls the function `f(t)` (functional notation).
   */
  readonly columnFunctions: readonly string[];
  readonly operators: readonly QualifiedName[];
  /** Every type the statement names (casts, typed literals, column definition lists). */
  readonly types: readonly QualifiedName[];
  /** Texts resolved to catalog objects by name (see {@link NameLookup}). */
  readonly nameLookups: readonly NameLookup[];
  /**
   * Every relation name in a FROM clause as written — the names of CTE references too: what
   * the statement can run is looked up for all of them, whatever resolution decides later.
   */
  readonly relations: readonly QualifiedName[];
  /** The highest `$n` the statement uses (0 for none). */
  readonly parameterCount: number;
}

/** The reg* types: a text cast to one is looked up by name in the catalog. */
const REG_TYPES = new Set([
  'regclass',
  'regtype',
  'regproc',
  'regprocedure',
  'regoper',
  'regoperator',
  'regnamespace',
  'regrole',
  'regconfig',
  'regdictionary',
  'regcollation',
]);

/**
 * Functions that look a catalog object up by a name (or an oid) given as an argument and answer
 * something about it: its existence, size, definition, privileges, properties.
 */
const NAME_FUNCTIONS =
  /^(?:to_reg\w+|has_\w+_privilege|pg_(?:relation|table|indexes|total_relation)_size|pg_relation_file(?:node|path)|pg_filenode_relation|pg_get_\w+def|pg_get_expr|pg_get_function_\w+|pg_get_serial_sequence|pg_get_partition_constraintdef|pg_get_statisticsobjdef\w*|pg_get_replica_identity_index|pg_describe_object|pg_identify_object\w*|pg_partition_(?:tree|ancestors|root)|pg_sequence_(?:last_value|parameters)|pg_(?:column|relation)_is_updatable|pg_index(?:_column)?_has_property|row_security_active|format_type|obj_description|col_description|shobj_description)$/;
/** …of which these take a schema's name. */
const SCHEMA_NAME_FUNCTIONS = /^(?:to_regnamespace|has_schema_privilege)$/;

/** Which argument of a name function is the object (the others: a role, a privilege, a column). */
function objectArgument(name: string, count: number): number {
  if (name === 'has_column_privilege') return count >= 4 ? 1 : 0;
  if (/^has_\w+_privilege$/.test(name)) return count >= 3 ? 1 : 0;
  return 0;
}

/** Statement nodes that change data; one anywhere (a CTE, a sub-statement) refuses the query. */
const WRITE_NODES = new Set(['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt']);

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The sval of each `{String: {sval}}` in a name list. */
function names(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((item) => {
    if (isNode(item) && isNode(item.String)) {
      return typeof item.String.sval === 'string' ? item.String.sval : '';
    }
    if (isNode(item) && 'A_Star' in item) return '*';
    return '';
  });
}

function qualified(parts: readonly string[]): QualifiedName {
  const name = parts.at(-1) ?? '';
  const schema = parts.length > 1 ? parts.at(-2) : undefined;
  return schema === undefined ? { name } : { schema, name };
}

/** Parses with the real grammar; a syntax error names the position. */
async function parseOne(sql: string): Promise<{ stmt: Node; text: string }> {
  let result: Awaited<ReturnType<typeof parse>>;
  try {
    result = await parse(sql);
  } catch (error) {
    const details = (error as { sqlDetails?: { cursorPosition?: number } }).sqlDetails;
    const at =
      details?.cursorPosition === undefined ? '' : ` (at character ${details.cursorPosition + 1})`;
    throw new SqlRefusedError('syntax', `${(error as Error).message.replace(/\.$/, '')}${at}.`);
  }
  const stmts = result.stmts ?? [];
  if (stmts.length !== 1) {
    throw new SqlRefusedError(
      'single_statement',
      stmts.length === 0
        ? 'the SQL is empty (only comments or semicolons).'
        : `exactly one statement is allowed, this has ${stmts.length}. Send one SELECT per call.`,
    );
  }
  const raw = stmts[0] as unknown as { stmt: Node; stmt_location?: number; stmt_len?: number };
  // Locations are byte offsets into the UTF-8 text; a length of 0 means "to the end".
  const bytes = Buffer.from(sql);
  const start = raw.stmt_location ?? 0;
  const end =
    raw.stmt_len === undefined || raw.stmt_len === 0 ? bytes.length : start + raw.stmt_len;
  return { stmt: raw.stmt, text: bytes.subarray(start, end).toString().trim() };
}

/**
 * Checks that `sql` is exactly one read-only statement (a SELECT, or an EXPLAIN of one) and
 * collects what the later checks need: every function and operator called anywhere, every
 * relation read, every column reference and where it stands. Throws {@link SqlRefusedError}.
 */
export async function analyzeSql(
  sql: string,
  options: { allowExplainAnalyze: boolean },
): Promise<SqlAnalysis> {
  const { stmt, text } = await parseOne(sql);
  const [type] = Object.keys(stmt);
  let kind: 'select' | 'explain';
  let analyze = false;
  let select: Node;
  if (type === 'SelectStmt') {
    kind = 'select';
    select = stmt.SelectStmt as Node;
  } else if (type === 'ExplainStmt') {
    kind = 'explain';
    const explain = stmt.ExplainStmt as Node;
    const inner = explain.query as Node;
    if (!isNode(inner) || !('SelectStmt' in inner)) {
      throw new SqlRefusedError(
        'statement_type',
        `EXPLAIN is allowed only of a SELECT, not of ${describeStatement(Object.keys(inner ?? {})[0])}.`,
      );
    }
    for (const option of (explain.options as Node[] | undefined) ?? []) {
      const def = option.DefElem as Node | undefined;
      if (def?.defname !== 'analyze') continue;
      // `ANALYZE false` is the explicit default.
      const arg = def.arg as Node | undefined;
      const off = isNode(arg) && isNode(arg.Boolean) && arg.Boolean.boolval !== true;
      const offText =
        isNode(arg) && isNode(arg.String) && /^(?:false|off|0)$/i.test(String(arg.String.sval));
      if (!off && !offText) analyze = true;
    }
    if (analyze && !options.allowExplainAnalyze) {
      throw new SqlRefusedError(
        'explain_analyze',
        'EXPLAIN ANALYZE runs the query and is disabled on this server (POSTGRES_ALLOW_EXPLAIN_ANALYZE). Use EXPLAIN without ANALYZE.',
      );
    }
    select = inner.SelectStmt as Node;
  } else {
    throw new SqlRefusedError(
      'statement_type',
      `only SELECT (and EXPLAIN of a SELECT) is allowed, this is ${describeStatement(type)}.`,
    );
  }
  return collect(kind, analyze, text, select);
}

const STATEMENT_NAMES: Record<string, string> = {
  InsertStmt: 'an INSERT',
  UpdateStmt: 'an UPDATE',
  DeleteStmt: 'a DELETE',
  MergeStmt: 'a MERGE',
  TransactionStmt: 'a transaction command (BEGIN/COMMIT/ROLLBACK/END)',
  VariableSetStmt: 'a SET',
  CopyStmt: 'a COPY',
  DoStmt: 'a DO block',
  CallStmt: 'a CALL',
  PrepareStmt: 'a PREPARE',
  ExecuteStmt: 'an EXECUTE',
  ListenStmt: 'a LISTEN',
  NotifyStmt: 'a NOTIFY',
  CreateStmt: 'a CREATE TABLE',
  CreateTableAsStmt: 'a CREATE TABLE AS',
  DropStmt: 'a DROP',
  TruncateStmt: 'a TRUNCATE',
  LockStmt: 'a LOCK',
  VacuumStmt: 'a VACUUM/ANALYZE',
  DeclareCursorStmt: 'a DECLARE CURSOR',
  GrantStmt: 'a GRANT/REVOKE',
};

function describeStatement(type: string | undefined): string {
  if (type === undefined) return 'an unknown statement';
  return STATEMENT_NAMES[type] ?? `a ${type.replace(/Stmt$/, '')} statement`;
}

function collect(
  kind: 'select' | 'explain',
  analyze: boolean,
  statement: string,
  top: Node,
): SqlAnalysis {
  const functions: QualifiedName[] = [];
  const columnFunctions = new Set<string>();
  const operators: QualifiedName[] = [];
  const types: QualifiedName[] = [];
  const nameLookups: NameLookup[] = [];
  const relations: QualifiedName[] = [];
  let parameterCount = 0;

  // An object argument: a constant name, a number (an oid), or an expression. A constant cast
  // to a reg* type is the constant (the cast is a lookup of its own).
  const lookup = (via: string, arg: unknown, schema: boolean): NameLookup => {
    let node = isNode(arg) ? arg : {};
    const cast = isNode(node.TypeCast) ? node.TypeCast : undefined;
    if (
      cast !== undefined &&
      REG_TYPES.has(names((cast.typeName as Node | undefined)?.names).at(-1) ?? '')
    ) {
      node = isNode(cast.arg) ? cast.arg : {};
    }
    const value = isNode(node.A_Const) ? node.A_Const : undefined;
    const text =
      isNode(value?.sval) && typeof value.sval.sval === 'string' ? value.sval.sval : undefined;
    const number = isNode(value?.ival) || isNode(value?.fval);
    // A text of digits is an oid to the reg* input functions.
    const byOid = number || (text !== undefined && /^\s*\d+\s*$/.test(text));
    return { via, value: number ? '' : text, byOid, schema };
  };

  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (!isNode(value)) return;
    // Clauses are checked by key, wherever they sit: the parser inlines some nodes without
    // their type wrapper (the branches of a UNION, an INTO target).
    if (value.intoClause !== undefined) {
      throw new SqlRefusedError(
        'select_into',
        'SELECT … INTO creates a table; select the rows instead.',
      );
    }
    if (value.lockingClause !== undefined) {
      throw new SqlRefusedError(
        'locking_clause',
        'FOR UPDATE/SHARE locks rows; remove the locking clause.',
      );
    }
    for (const [key, raw] of Object.entries(value)) {
      if (WRITE_NODES.has(key)) {
        throw new SqlRefusedError(
          'data_modifying',
          `${describeStatement(key)} inside the query (for example a data-modifying WITH) is not allowed.`,
        );
      }
      if (!isNode(raw)) {
        visit(raw);
        continue;
      }
      const body = raw;
      switch (key) {
        case 'FuncCall': {
          const fn = qualified(names(body.funcname));
          functions.push(fn);
          const name = fn.name.toLowerCase();
          const args = (body.args as unknown[] | undefined) ?? [];
          const object = args[objectArgument(name, args.length)];
          if (NAME_FUNCTIONS.test(name) && object !== undefined) {
            nameLookups.push(lookup(`${name}()`, object, SCHEMA_NAME_FUNCTIONS.test(name)));
          }
          break;
        }
        // A type name: a TypeName node, or one inlined under its field (a cast's typeName, a
        // column definition's).
        case 'TypeName':
        case 'typeName':
          types.push(qualified(names(body.names)));
          break;
        case 'TypeCast': {
          const target = names((body.typeName as Node | undefined)?.names).at(-1) ?? '';
          if (REG_TYPES.has(target)) {
            nameLookups.push(lookup(`::${target}`, body.arg, target === 'regnamespace'));
          }
          break;
        }
        case 'A_Expr': {
          const name = names(body.name);
          // BETWEEN and friends carry a keyword, not an operator name.
          if (name.length > 0 && !/^[A-Z_ ]+$/.test(name.at(-1)!)) operators.push(qualified(name));
          break;
        }
        case 'SortBy':
          // ORDER BY x USING <op>
          if (Array.isArray(body.useOp)) operators.push(qualified(names(body.useOp)));
          break;
        case 'RangeTableSample':
          // The sampling method is a function (its handler).
          functions.push(qualified(names(body.method)));
          break;
        case 'RangeVar': {
          const relname = String(body.relname);
          relations.push(
            typeof body.schemaname === 'string'
              ? { schema: body.schemaname, name: relname }
              : { name: relname },
          );
          break;
        }
        case 'ColumnRef': {
          const fields = names(body.fields);
          if (fields.length > 1 && fields.at(-1) !== '*') columnFunctions.add(fields.at(-1)!);
          break;
        }
        case 'ParamRef':
          parameterCount = Math.max(parameterCount, Number(body.number ?? 0));
          break;
        default:
          break;
      }
      visit(body);
    }
  };
  visit({ SelectStmt: top });

  return {
    kind,
    analyze,
    statement,
    select: top,
    functions,
    columnFunctions: [...columnFunctions],
    operators,
    types,
    nameLookups,
    relations,
    parameterCount,
  };
}
