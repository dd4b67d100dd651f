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
  | 'function_switches_role'
  | 'operator_volatile'
  | 'name_lookup'
  | 'schema_not_allowed'
  | 'system_catalog'
  | 'masked_column'
  | 'unresolved_reference'
  | 'value_size';

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
  /** Whether the text names a role (`::regrole`, `pg_has_role()`): roles are not shown here. */
  readonly role?: boolean;
}

/**
 * A value given a type the statement names — a cast, a typed literal, the value of an
 * input-validation function (`pg_input_is_valid(value, 'type')`): if the type's input looks names
 * up in the catalog (a reg* type, or a domain, array or composite type built on one — the
 * catalog says), the value is a {@link NameLookup} too.
 */
export interface TypedValue {
  readonly type: QualifiedName;
  readonly lookup: NameLookup;
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
  /** Values whose type the statement names (see {@link TypedValue}). */
  readonly typedValues: readonly TypedValue[];
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
 * something about it: its existence, size, properties, privileges; and every built-in function
 * with an argument of a reg* type (a text there is looked up by the type's input function) —
 * test/sql-guard.test.ts holds this list to PostgreSQL's catalog.
 */
const NAME_FUNCTIONS =
  /^(?:to_reg\w+|has_\w+_privilege|pg_(?:relation|table|indexes|total_relation)_size|pg_relation_file(?:node|path)|pg_filenode_relation|pg_get_serial_sequence|pg_get_replica_identity_index|pg_describe_object|pg_identify_object\w*|pg_partition_(?:tree|ancestors|root)|pg_sequence_(?:last_value|parameters)|pg_get_sequence_data|pg_(?:column|relation)_is_updatable|pg_relation_is_publishable|pg_index(?:_column)?_has_property|pg_basetype|row_security_active|format_type|obj_description|col_description|shobj_description|(?:brin_summarize|brin_desummarize)_\w+|gin_clean_pending_list|pg_extension_config_dump)$/;
/** …of which these take a schema's name. */
const SCHEMA_NAME_FUNCTIONS = /^(?:to_regnamespace|has_schema_privilege)$/;
/** …of which these take a role's name (roles are not shown on this server). */
const ROLE_NAME_FUNCTIONS = /^(?:to_regrole|pg_has_role)$/;
/**
 * Text search functions whose first argument, when more than the document is given, is a
 * configuration or dictionary (regconfig, regdictionary) — looked up by name when it is a text.
 */
const TEXT_SEARCH_FUNCTIONS =
  /^(?:to_tsvector|to_tsquery|plainto_tsquery|phraseto_tsquery|websearch_to_tsquery|ts_headline|ts_debug|json_to_tsvector|jsonb_to_tsvector|ts_lexize)$/;
/**
 * Functions that give an object's definition as text: what a view, a rule, a function, a
 * trigger, a constraint or a default reads may lie outside the allowed schemas, and the text
 * would name it.
 */
const DEFINITION_FUNCTIONS =
  /^(?:pg_get_\w+def|pg_get_expr|pg_get_function_\w+|pg_get_\w+def_\w+|pg_get_statisticsobjdef\w*|pg_get_object_address)$/;
/** Input-validation functions: `(value, type name as text)`; both are looked up. */
const INPUT_FUNCTIONS = /^(?:pg_input_is_valid|pg_input_error_info)$/;

/** Which argument of a name function is the object (the others: a role, a privilege, a column). */
function objectArgument(name: string, count: number): number {
  if (name === 'has_column_privilege') return count >= 4 ? 1 : 0;
  if (/^has_\w+_privilege$/.test(name)) return count >= 3 ? 1 : 0;
  // (class, object id, sub-id): the object is the second.
  if (/^(?:pg_describe_object|pg_identify_object\w*)$/.test(name)) return 1;
  return 0;
}

/** Whether `name` is a function whose arguments name catalog objects ({@link NAME_FUNCTIONS}). */
export function looksNamesUp(name: string): boolean {
  return (
    NAME_FUNCTIONS.test(name) ||
    ROLE_NAME_FUNCTIONS.test(name) ||
    TEXT_SEARCH_FUNCTIONS.test(name) ||
    DEFINITION_FUNCTIONS.test(name) ||
    INPUT_FUNCTIONS.test(name)
  );
}

/**
 * A type name given as text, read as PostgreSQL reads one (parseTypeString: `SELECT NULL::<text>`,
 * which must be exactly one cast of NULL): `' RegClass '`, `'pg_catalog."regclass"'`,
 * `'regclass[]'`, `'numeric(10,2)'`. Undefined when it is not a type name.
 */
async function typeNameOf(text: string): Promise<QualifiedName | undefined> {
  try {
    const stmts = (await parse(`SELECT NULL::${text}`)).stmts ?? [];
    const select = (stmts[0]?.stmt as Node | undefined)?.SelectStmt as Node | undefined;
    const targets = select?.targetList as Node[] | undefined;
    const cast = (targets?.[0]?.ResTarget as Node | undefined)?.val as Node | undefined;
    const body = cast?.TypeCast as Node | undefined;
    const isNull = isNode(body?.arg) && isNode(body.arg.A_Const);
    const only = Object.keys(select ?? {}).every(
      (k) => k === 'targetList' || k === 'limitOption' || k === 'op',
    );
    if (stmts.length !== 1 || targets?.length !== 1 || !isNull || !only) return undefined;
    return qualified(names((body.typeName as Node | undefined)?.names));
  } catch {
    return undefined;
  }
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
  const { analysis, inputTypes } = collect(kind, analyze, text, select);
  // The type argument of an input-validation function is a type name PostgreSQL looks up: read
  // as PostgreSQL reads it, it joins the statement's types (their schemas, their input functions
  // and whether their input looks names up are judged like a cast's).
  for (const { via, text: typeText, value } of inputTypes) {
    const type = await typeNameOf(typeText);
    if (type === undefined) {
      throw new SqlRefusedError(
        'name_lookup',
        `${via} takes a type name as its second argument; '${typeText.slice(0, 100)}' is not one.`,
      );
    }
    analysis.types.push(type);
    const lookup = valueLookup(via, value, type.name);
    analysis.typedValues.push({ type, lookup });
    if (REG_TYPES.has(type.name) && (type.schema === undefined || type.schema === 'pg_catalog')) {
      analysis.nameLookups.push(lookup);
    }
  }
  return analysis;
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

/** A value looked up as a name of the reg* type `target` (a role, a schema, an object). */
function valueLookup(via: string, arg: unknown, target: string): NameLookup {
  const found = constantLookup(via, arg, target === 'regnamespace');
  return target === 'regrole' ? { ...found, role: true } : found;
}

// An object argument: a constant name, a number (an oid), or an expression. A constant cast to
// a reg* type is the constant (the cast is a lookup of its own).
function constantLookup(via: string, arg: unknown, schema: boolean): NameLookup {
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
}

/** The constant text of an argument, if it is one. */
function constantText(arg: unknown): string | undefined {
  const value = isNode(arg) && isNode(arg.A_Const) ? arg.A_Const : undefined;
  return isNode(value?.sval) && typeof value.sval.sval === 'string' ? value.sval.sval : undefined;
}

/**
 * What a function call names: the function, the object an object-naming function looks up from
 * a value (a relation, a schema, a role, a text-search configuration), the type an
 * input-validation function reads from text. Definition functions are refused here.
 */
function functionCall(
  body: Node,
  functions: QualifiedName[],
  nameLookups: NameLookup[],
  inputTypes: Array<{ via: string; text: string; value: unknown }>,
): void {
  const fn = qualified(names(body.funcname));
  functions.push(fn);
  const name = fn.name.toLowerCase();
  const via = `${name}()`;
  const args = (body.args as unknown[] | undefined) ?? [];
  const object = args[objectArgument(name, args.length)];
  if (DEFINITION_FUNCTIONS.test(name)) {
    throw new SqlRefusedError(
      'system_catalog',
      `${via} gives an object's definition as text, and what it reads may lie outside the allowed schemas. Use postgres_describe_table, or query the object itself.`,
    );
  }
  if (ROLE_NAME_FUNCTIONS.test(name)) {
    nameLookups.push({ via, value: undefined, byOid: false, schema: false, role: true });
  } else if (NAME_FUNCTIONS.test(name) && object !== undefined) {
    nameLookups.push(constantLookup(via, object, SCHEMA_NAME_FUNCTIONS.test(name)));
    // has_table_privilege(role, table, privilege): the role is looked up too.
    if (/^has_\w+_privilege$/.test(name) && objectArgument(name, args.length) === 1) {
      const role = args[0];
      if (!(isNode(role) && isNode(role.SQLValueFunction))) {
        nameLookups.push({
          via,
          value: undefined,
          byOid: false,
          schema: false,
          role: true,
        });
      }
    }
  } else if (TEXT_SEARCH_FUNCTIONS.test(name) && args.length >= 2) {
    // A configuration given as text; an expression is typed, a parameter is described.
    if (constantText(args[0]) !== undefined) nameLookups.push(constantLookup(via, args[0], false));
  } else if (INPUT_FUNCTIONS.test(name)) {
    const typeText = constantText(args[1]);
    if (typeText === undefined) {
      throw new SqlRefusedError(
        'name_lookup',
        `${via} looks its type up by a name computed at run time; write the type name as a constant.`,
      );
    }
    inputTypes.push({ via, text: typeText, value: args[0] });
  }
}

interface Collected {
  readonly analysis: SqlAnalysis & {
    types: QualifiedName[];
    typedValues: TypedValue[];
    nameLookups: NameLookup[];
  };
  /** Input-validation calls: the type name as text, and the value given it. */
  readonly inputTypes: ReadonlyArray<{ via: string; text: string; value: unknown }>;
}

function collect(
  kind: 'select' | 'explain',
  analyze: boolean,
  statement: string,
  top: Node,
): Collected {
  const functions: QualifiedName[] = [];
  const columnFunctions = new Set<string>();
  const operators: QualifiedName[] = [];
  const types: QualifiedName[] = [];
  const nameLookups: NameLookup[] = [];
  const typedValues: TypedValue[] = [];
  const inputTypes: Array<{ via: string; text: string; value: unknown }> = [];
  const relations: QualifiedName[] = [];
  let parameterCount = 0;

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
        case 'FuncCall':
          functionCall(body, functions, nameLookups, inputTypes);
          break;
        // A type name: a TypeName node, or one inlined under its field (a cast's typeName, a
        // column definition's).
        case 'TypeName':
        case 'typeName':
          types.push(qualified(names(body.names)));
          break;
        case 'TypeCast': {
          const type = qualified(names((body.typeName as Node | undefined)?.names));
          const value = valueLookup(`::${type.name}`, body.arg, type.name);
          typedValues.push({ type, lookup: value });
          if (REG_TYPES.has(type.name)) nameLookups.push(value);
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
    analysis: {
      kind,
      analyze,
      statement,
      select: top,
      functions,
      columnFunctions: [...columnFunctions],
      operators,
      types,
      nameLookups,
      typedValues,
      relations,
      parameterCount,
    },
    inputTypes,
  };
}
