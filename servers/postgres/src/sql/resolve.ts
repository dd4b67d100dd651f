import type {
  ColumnRef,
  CommonTableExpr,
  JoinExpr,
  RangeVar,
  SelectStmt,
  SubLink,
} from 'libpg-query';
import { SqlRefusedError } from './guard.js';

/**
 * Name resolution, as PostgreSQL's parse analysis does it (docs/adr/0015-resolution-not-names.md).
 * Every relation and column reference of a statement is resolved to what it denotes — a base
 * table's column, through alias column lists, subquery and CTE outputs (CTE names scoped per
 * query level), joins and their merged USING/NATURAL columns, LATERAL, whole-row references,
 * functional notation (`t.f` is `f(t)`), views and materialized views (their definitions resolved
 * in turn), partitions and inheritance children. The masking, schema and catalog rules then decide
 * on the resolved objects, never on how a name is spelled.
 *
 * Masking keeps one invariant: a masked value may reach the answer only unchanged, as a column
 * of the outermost SELECT (where it is replaced by `[masked]`). Any other use — a filter, a join,
 * a sort, grouping, DISTINCT, a window, an aggregate, a function or cast (whose result or error
 * text would carry it), a subquery's result, a set operation, a whole-row value — is refused,
 * and so is any reference that cannot be resolved with certainty while a masked column is in
 * reach is looked up afresh (a stale catalog answer must not hide a masked column). Where a name could denote several things (a function in FROM whose columns are not
 * known), every possibility is kept: masked if any of them is.
 */

/** The key of a relation `schema.name` in the catalog caches (names may contain dots). */
export function relationKey(schema: string, name: string): string {
  return `${schema}\0${name}`;
}

/** A relation as the catalog describes it. */
export interface RelationInfo {
  readonly oid: number;
  readonly schema: string;
  readonly name: string;
  /** pg_class.relkind: r table, p partitioned, v view, m materialized view, f foreign, … */
  readonly kind: string;
  /** Its columns (attnum > 0, not dropped), in attnum order. */
  readonly columns: ReadonlyArray<{ readonly name: string; readonly attnum: number }>;
  /** The parsed definition of a view or materialized view. */
  readonly definition?: SelectStmt | undefined;
  /** Columns (attnum) that its enabled row-security policies read. */
  readonly policyColumns: readonly number[];
  /** The columns of its own partition key (a partitioned table); `''` for a key expression. */
  readonly partitionKey: readonly string[];
  /** The columns of its ancestors' partition keys (a partition: they chose its rows). */
  readonly ancestorKeys: readonly string[];
  /** The schemas of its inheritance children and partitions (a scan of it reads them too). */
  readonly descendantSchemas: readonly string[];
  /** The planner's estimate of its rows (pg_class.reltuples), once it has been analysed. */
  readonly rowEstimate?: number;
}

/** A masked column of the database, as resolved from POSTGRES_MASK_COLUMNS (with inheritance). */
export interface MaskedColumn {
  readonly schema: string;
  readonly table: string;
  readonly column: string;
  readonly tableOid: number;
  readonly attnum: number;
  /**
   * A generated column its table computes from the masked column `source`: a stored one holds
   * the derived value (masked like the column), a virtual one computes it when read (refused,
   * like a view's computed column: computing may fail with the value in the error).
   */
  readonly generated?: 'stored' | 'virtual';
  readonly source?: string;
}

/** What resolution reads: the catalog, the masked columns and the allowed schemas. */
export interface ResolverCatalog {
  /** `schema.name`: its description, null when it does not exist, undefined when not looked up. */
  relation(schema: string, name: string): RelationInfo | null | undefined;
  /** The masked column at (table oid, attnum), if any. */
  masked(tableOid: number, attnum: number): MaskedColumn | undefined;
  /** Whether a function of this name exists where PostgreSQL looks (for `t.f`, that is `f(t)`). */
  isFunction(name: string): boolean;
  /** Where unqualified relation names are looked up, in order (pg_catalog, then the allowed). */
  readonly searchPath: readonly string[];
  readonly allowed: ReadonlySet<string>;
  /** The database's name (a four-part column reference must name it). */
  readonly database: string;
}

/** A relation a statement reads, and the view it is read through (if any). */
export interface ReadRelation {
  readonly info: RelationInfo;
  /** The outermost view that reads it, when the statement itself does not name it. */
  readonly through?: string;
}

/** What a statement resolves to. */
export interface Resolution {
  /** Relations ({@link relationKey}) not looked up yet: look them up, then resolve again. */
  readonly missing: readonly string[];
  /**
   * For each column of the answer (in order, as far as known): the masked column whose values it
   * passes through, or null.
   */
  readonly outputs: ReadonlyArray<string | null>;
  /** False when a star over a function in FROM leaves the positions after it unknown. */
  readonly outputsExact: boolean;
  /** Names of answer columns that pass masked values through (for the positions not known). */
  readonly maskedNames: ReadonlySet<string>;
  /** `oid:attnum` of view columns that pass a masked value through (result origins to mask). */
  readonly maskedOrigins: ReadonlySet<string>;
  readonly relations: readonly ReadRelation[];
  /** Whether a masked value flows anywhere in the statement (plainly projected included). */
  readonly touchesMasked: boolean;
  /** Names used as functions through column notation (`t.f` for `f(t)`). */
  readonly columnFunctions: readonly string[];
  /**
   * References that denote nothing this catalog knows of (PostgreSQL will refuse them, unless
   * the catalog answers were stale: looked up afresh when a masked column is in reach).
   */
  readonly unresolved: readonly string[];
  /** Whether a relation the statement reads has a masked column. */
  readonly maskedInReach: boolean;
}

/**
 * What a value is, for masking: the masked columns whose values it is, unchanged (empty: it
 * carries no masked value), or — for a view's column computed from a masked one — why reading
 * it at all is refused.
 */
interface Value {
  readonly masked: readonly string[];
  readonly derived?: string;
}

const CLEAN: Value = { masked: [] };

/** A column of a FROM item, or an output of a query level. */
interface Column {
  /** Undefined when it has a name this check cannot tell (it carries no masked value). */
  readonly name: string | undefined;
  readonly value: Value;
}

/** An output of a query level; `unknown` stands for any number of columns not known here. */
interface Output extends Column {
  readonly unknown?: true;
}

/** An entry of a query level's namespace (a FROM item, as PostgreSQL's ParseNamespaceItem). */
interface Item {
  /** The name it is referred by: its alias, or the relation's (or function's) name. */
  readonly refname: string | undefined;
  /** For an unaliased relation, its schema and name (`schema.table.column`). */
  readonly relation?: { readonly schema: string; readonly name: string };
  readonly columns: readonly Column[];
  /** It may have columns not known here (a function in FROM): each carries no masked value. */
  readonly open: boolean;
  readonly relVisible: boolean;
  readonly colsVisible: boolean;
  /** System columns (ctid, tableoid, …) of a table. */
  readonly system?: ReadonlyMap<string, Value>;
  /** For messages. */
  readonly shown: string;
}

interface Entry {
  readonly item: Item;
  /** Added while the FROM list is read: visible only to LATERAL items after it. */
  lateralOnly: boolean;
}

/** One query level: its FROM items, its parent level and the CTEs in scope. */
interface Level {
  readonly entries: Entry[];
  readonly parent: Level | undefined;
  /** Whether this level may see its parent's LATERAL-only items (a LATERAL subquery). */
  readonly lateral: boolean;
  readonly ctes: CteFrame | undefined;
}

/** The CTEs of one WITH clause, and the enclosing WITH clauses'. */
interface CteFrame {
  readonly parent: CteFrame | undefined;
  readonly entries: Map<string, CteEntry>;
}

interface CteEntry {
  readonly node: CommonTableExpr;
  state: 'pending' | 'resolving' | 'done';
  outputs?: readonly Output[];
  /** A recursive CTE's columns while its recursive term is resolved. */
  seed?: readonly Output[];
  resolve(): readonly Output[];
}

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The one key and body of a wrapped node (`{ ColumnRef: {…} }`). */
function unwrap(node: unknown): [string, Node] | undefined {
  if (!isNode(node)) return undefined;
  const keys = Object.keys(node);
  if (keys.length !== 1) return undefined;
  const body = node[keys[0]!];
  return isNode(body) ? [keys[0]!, body] : undefined;
}

/** The strings of a name list, `*` for a star. */
export function nameList(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((item: unknown) => {
    const [kind, body] = unwrap(item) ?? ['', {}];
    if (kind === 'String') return typeof body.sval === 'string' ? body.sval : '';
    if (kind === 'A_Star') return '*';
    return '';
  });
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function merge(values: readonly Value[]): Value {
  const masked = [...new Set(values.flatMap((v) => v.masked))];
  const derived = values.find((v) => v.derived !== undefined)?.derived;
  return derived === undefined ? { masked } : { masked, derived };
}

/** Names with columns renamed positionally by an alias column list. */
function rename<T extends Column>(columns: readonly T[], names: unknown): T[] {
  const given = nameList(names);
  return columns.map((c, i) => (i < given.length ? { ...c, name: given[i] } : c));
}

/** `Output`s as an item's columns: an `unknown` output makes the item open. */
function itemColumns(outputs: readonly Output[]): { columns: Column[]; open: boolean } {
  return {
    columns: outputs.filter((o) => o.unknown !== true),
    open: outputs.some((o) => o.unknown === true || o.name === undefined),
  };
}

const SYSTEM_CATALOG = (schema: string): boolean =>
  schema === 'pg_catalog' || schema === 'information_schema' || schema.startsWith('pg_');

/** PostgreSQL's name for an expression's output column (FigureColname), if certain. */
function figureColname(node: unknown): { name: string | undefined; strength: number } {
  const [kind, body] = unwrap(node) ?? ['', {}];
  switch (kind) {
    case 'ColumnRef': {
      const last = nameList(body.fields).at(-1);
      return last === undefined || last === '*'
        ? { name: undefined, strength: 0 }
        : { name: last, strength: 2 };
    }
    case 'A_Indirection': {
      const fields = nameList(body.indirection).filter((f) => f !== '' && f !== '*');
      return fields.length > 0 ? { name: fields.at(-1), strength: 2 } : figureColname(body.arg);
    }
    case 'FuncCall':
      return { name: nameList(body.funcname).at(-1), strength: 2 };
    case 'A_Expr':
      return body.kind === 'AEXPR_NULLIF'
        ? { name: 'nullif', strength: 2 }
        : { name: '?column?', strength: 0 };
    case 'TypeCast': {
      const inner = figureColname(body.arg);
      if (inner.strength > 1) return inner;
      const type = nameList((body.typeName as Node | undefined)?.names).at(-1);
      return type === undefined ? inner : { name: type, strength: 1 };
    }
    case 'CollateClause':
      return figureColname(body.arg);
    case 'CaseExpr': {
      const inner = figureColname(body.defresult);
      return inner.strength > 1 ? inner : { name: 'case', strength: 1 };
    }
    case 'A_ArrayExpr':
      return { name: 'array', strength: 2 };
    case 'RowExpr':
      return { name: 'row', strength: 2 };
    case 'CoalesceExpr':
      return { name: 'coalesce', strength: 2 };
    case 'MinMaxExpr':
      return { name: body.op === 'IS_GREATEST' ? 'greatest' : 'least', strength: 2 };
    case 'GroupingFunc':
      return { name: 'grouping', strength: 2 };
    case 'A_Const':
    case 'BoolExpr':
    case 'NullTest':
    case 'BooleanTest':
    case 'ParamRef':
      return { name: '?column?', strength: 0 };
    default:
      // Sublinks, SQL value functions, XML and JSON constructors have names of their own that
      // this check does not reproduce: unknown (such a column carries no masked value).
      return { name: undefined, strength: 0 };
  }
}

/** Resolves one statement's query. Throws {@link SqlRefusedError}. */
export function resolveStatement(select: SelectStmt, catalog: ResolverCatalog): Resolution {
  return new Resolver(catalog).statement(select);
}

/**
 * The columns of a view or materialized view as it resolves (for the schema tools): for each
 * attnum, whether its values are masked (or computed from masked ones).
 */
export function viewColumnsMasked(
  info: RelationInfo,
  catalog: ResolverCatalog,
): { missing: readonly string[]; masked: ReadonlySet<number> } {
  const resolver = new Resolver(catalog);
  const columns = resolver.relationColumns(info);
  const masked = new Set<number>();
  info.columns.forEach((c, i) => {
    const value = columns[i]?.value;
    if (value !== undefined && (value.masked.length > 0 || value.derived !== undefined)) {
      masked.add(c.attnum);
    }
  });
  return { missing: [...resolver.missing], masked };
}

class Resolver {
  readonly missing = new Set<string>();
  private readonly catalog: ResolverCatalog;
  private readonly relations: ReadRelation[] = [];
  private readonly maskedOrigins = new Set<string>();
  private readonly columnFunctions = new Set<string>();
  private readonly unresolved: string[] = [];
  /** Whether a relation read has a masked column. */
  private maskedInReach = false;
  private touchesMasked = false;
  /** The views being resolved, outermost first. */
  private readonly views: RelationInfo[] = [];
  /** Views resolved in this run. */
  private readonly viewCache = new Map<number, readonly Column[]>();

  constructor(catalog: ResolverCatalog) {
    this.catalog = catalog;
  }

  statement(select: SelectStmt): Resolution {
    const outputs = this.query(select, undefined, false, undefined);
    const positions: Array<string | null> = [];
    const maskedNames = new Set<string>();
    let exact = true;
    for (const out of outputs) {
      if (out.unknown === true) {
        exact = false;
        continue;
      }
      const label = out.value.masked[0] ?? null;
      if (label !== null && out.name !== undefined) maskedNames.add(out.name);
      if (exact) positions.push(label);
    }
    return {
      missing: [...this.missing],
      outputs: positions,
      outputsExact: exact,
      maskedNames,
      maskedOrigins: this.maskedOrigins,
      relations: this.relations,
      touchesMasked: this.touchesMasked,
      columnFunctions: [...this.columnFunctions],
      unresolved: this.unresolved,
      maskedInReach: this.maskedInReach,
    };
  }

  // ─── refusals ───────────────────────────────────────────────────────────────────────────

  private where(): string {
    const view = this.views[0];
    return view === undefined ? '' : ` (inside the view ${view.schema}.${view.name})`;
  }

  /**
   * How a refusal names a catalog object: by name where the caller may see it (an allowed
   * schema, a system catalog), otherwise only as what it is — a refusal may name only what the
   * caller wrote or may see, whatever a view reads behind it.
   */
  private named(schema: string, ...names: string[]): string {
    if (this.catalog.allowed.has(schema) || SYSTEM_CATALOG(schema)) {
      return [schema, ...names].join('.');
    }
    return names.length > 1
      ? 'a column outside the allowed schemas'
      : 'a relation outside the allowed schemas';
  }

  /**
   * Refuses the statement. Inside a view's definition — text the caller is not shown — the
   * message names only the view the statement reads, never the definition's own names.
   */
  private refuse(
    rule: 'masked_column' | 'unresolved_reference' | 'schema_not_allowed' | 'system_catalog',
    message: string,
    insideView?: string,
  ): never {
    const view = this.views[0];
    if (view !== undefined) {
      const shown = `${view.schema}.${view.name}`;
      throw new SqlRefusedError(
        rule,
        `${insideView ?? `the definition of the view ${shown} could not be resolved with certainty`}. Query the columns of ${shown} that do not carry masked values, or the tables it reads.`.replace(
          '{view}',
          shown,
        ),
      );
    }
    throw new SqlRefusedError(rule, `${message}.`);
  }

  /** A value used (not passed through): refused if it carries a masked value. */
  private use(value: Value, shown: string, sink: string, collect?: Value[]): void {
    if (collect !== undefined) {
      if (value.masked.length > 0 || value.derived !== undefined) collect.push(value);
      return;
    }
    if (value.derived !== undefined) {
      this.refuse(
        'masked_column',
        `${shown} is ${value.derived}; it cannot be read`,
        `the view {view} uses a value ${value.derived} in its definition (a filter, a join, an ordering or a computation), so what it returns would reveal it`,
      );
    }
    if (value.masked.length === 0) return;
    this.refuse(
      'masked_column',
      `${shown} is masked (${value.masked.join(', ')}) and is used in ${sink}${this.where()}. A masked column may only be listed as it is in the outermost SELECT (its values come back masked); it cannot be filtered, joined, sorted, grouped, aggregated, compared, transformed or cast, nor read through a subquery's result, a set operation or a whole-row value`,
      `the view {view} uses the masked column ${value.masked.join(', ')} in its definition (a filter, a join, an ordering or a computation), so which rows or values it returns would reveal it`,
    );
  }

  /** A value read as a column (passed through): a view's computed masked column is refused. */
  private read(value: Value, shown: string): Value {
    // Inside a view a computed column passes on as computed; only reading it is refused.
    if (value.derived !== undefined && this.views.length === 0) {
      this.refuse('masked_column', `${shown} is ${value.derived}; it cannot be read`);
    }
    if (value.masked.length > 0) this.touchesMasked = true;
    return value;
  }

  // ─── query levels ───────────────────────────────────────────────────────────────────────

  /** Resolves a SELECT (or a set operation of them) and returns its output columns. */
  private query(
    stmt: SelectStmt,
    parent: Level | undefined,
    lateral: boolean,
    ctes: CteFrame | undefined,
  ): Output[] {
    const frame =
      stmt.withClause === undefined ? ctes : this.withClause(stmt.withClause, parent, ctes);
    if (stmt.op !== undefined && stmt.op !== 'SETOP_NONE') {
      const left = this.query(stmt.larg!, parent, lateral, frame);
      const right = this.query(stmt.rarg!, parent, lateral, frame);
      for (const out of [...left, ...right]) {
        this.use(out.value, out.name ?? 'a column', 'a set operation (UNION/INTERSECT/EXCEPT)');
      }
      const outputs = left.map((o) => ({ ...o, value: CLEAN }));
      // Its ORDER BY and LIMIT see only its output columns.
      this.sortAndLimit(stmt, outputs, { entries: [], parent, lateral, ctes: frame });
      return outputs;
    }
    const level: Level = { entries: [], parent, lateral, ctes: frame };
    if (stmt.valuesLists !== undefined) {
      let width = 0;
      for (const row of stmt.valuesLists) {
        const items = (unwrap(row)?.[1].items as unknown[] | undefined) ?? [];
        width = Math.max(width, items.length);
        for (const item of items) this.expr(item, level, 'a VALUES list');
      }
      const outputs: Output[] = [];
      for (let i = 1; i <= width; i++) outputs.push({ name: `column${i}`, value: CLEAN });
      this.sortAndLimit(stmt, outputs, level);
      return outputs;
    }
    for (const node of (stmt.fromClause as unknown[] | undefined) ?? []) {
      for (const item of this.fromItem(level, node).ns) {
        level.entries.push({ item, lateralOnly: true });
      }
    }
    for (const entry of level.entries) entry.lateralOnly = false;
    const outputs = this.targets((stmt.targetList as unknown[] | undefined) ?? [], level);
    this.expr(stmt.whereClause, level, 'WHERE');
    for (const group of (stmt.groupClause as unknown[] | undefined) ?? []) {
      this.groupKey(group, outputs, level);
    }
    this.expr(stmt.havingClause, level, 'HAVING');
    for (const win of (stmt.windowClause as unknown[] | undefined) ?? []) {
      this.windowDef(unwrap(win)?.[1], level);
    }
    const distinct = stmt.distinctClause as unknown[] | undefined;
    if (distinct !== undefined) {
      if (distinct.length === 1 && isNode(distinct[0]) && Object.keys(distinct[0]).length === 0) {
        for (const out of outputs) this.use(out.value, out.name ?? 'a column', 'SELECT DISTINCT');
      } else {
        for (const node of distinct) this.sortKey(node, outputs, level, 'DISTINCT ON');
      }
    }
    this.sortAndLimit(stmt, outputs, level);
    return outputs;
  }

  private sortAndLimit(stmt: SelectStmt, outputs: readonly Output[], level: Level): void {
    for (const sort of (stmt.sortClause as unknown[] | undefined) ?? []) {
      this.sortKey(unwrap(sort)?.[1].node, outputs, level, 'ORDER BY');
    }
    this.expr(stmt.limitCount, level, 'LIMIT');
    this.expr(stmt.limitOffset, level, 'OFFSET');
  }

  /** A WITH clause: its CTEs, scoped as PostgreSQL scopes them. */
  private withClause(
    clause: NonNullable<SelectStmt['withClause']>,
    parent: Level | undefined,
    outer: CteFrame | undefined,
  ): CteFrame {
    const frame: CteFrame = { parent: outer, entries: new Map() };
    const recursive = clause.recursive === true;
    const entries: CteEntry[] = [];
    for (const node of (clause.ctes as unknown[] | undefined) ?? []) {
      const cte = unwrap(node)?.[1] as CommonTableExpr | undefined;
      if (cte?.ctename === undefined) continue;
      const entry: CteEntry = {
        node: cte,
        state: 'pending',
        resolve: () => {
          if (entry.state === 'done') return entry.outputs!;
          if (entry.state === 'resolving') {
            if (entry.seed !== undefined) return entry.seed;
            this.refuse(
              'unresolved_reference',
              `the recursive CTE ${cte.ctename} refers to itself before its non-recursive part`,
            );
          }
          entry.state = 'resolving';
          const query = unwrap(cte.ctequery)?.[1] as SelectStmt | undefined;
          if (query === undefined) {
            this.refuse('unresolved_reference', `the CTE ${cte.ctename} is not a SELECT`);
          }
          if (recursive && query.op !== undefined && query.op !== 'SETOP_NONE' && query.larg) {
            entry.seed = rename(
              this.query(query.larg, parent, false, frame).map((o) => ({ ...o, value: CLEAN })),
              cte.aliascolnames,
            );
          }
          let outputs = rename(this.query(query, parent, false, frame), cte.aliascolnames);
          outputs = this.searchAndCycle(cte, outputs);
          entry.outputs = outputs;
          entry.state = 'done';
          return outputs;
        },
      };
      entries.push(entry);
      // RECURSIVE: every CTE of the clause sees every other; otherwise only the earlier ones.
      if (recursive) frame.entries.set(cte.ctename, entry);
    }
    for (const entry of entries) {
      entry.resolve();
      if (!recursive) frame.entries.set(entry.node.ctename!, entry);
    }
    return frame;
  }

  /** SEARCH and CYCLE clauses compare the columns they list, and add columns of their own. */
  private searchAndCycle(cte: CommonTableExpr, outputs: Output[]): Output[] {
    const added: Output[] = [];
    const check = (columns: unknown, clause: string) => {
      for (const name of nameList(columns)) {
        for (const out of outputs.filter((o) => o.name === name)) {
          this.use(out.value, name, clause);
        }
      }
    };
    const search = cte.search_clause as Node | undefined;
    if (search !== undefined) {
      check(search.search_col_list, 'a SEARCH clause');
      added.push({ name: String(search.search_seq_column), value: CLEAN });
    }
    const cycle = cte.cycle_clause as Node | undefined;
    if (cycle !== undefined) {
      check(cycle.cycle_col_list, 'a CYCLE clause');
      added.push({ name: String(cycle.cycle_mark_column), value: CLEAN });
      added.push({ name: String(cycle.cycle_path_column), value: CLEAN });
    }
    return [...outputs, ...added];
  }

  private findCte(frame: CteFrame | undefined, name: string): CteEntry | undefined {
    for (let f = frame; f !== undefined; f = f.parent) {
      const entry = f.entries.get(name);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }

  // ─── FROM ───────────────────────────────────────────────────────────────────────────────

  /**
   * One FROM item: the item that stands for its columns (`top`) and the namespace entries it
   * adds (`ns`), as PostgreSQL's transformFromClauseItem returns them.
   */
  private fromItem(level: Level, node: unknown): { top: Item; ns: Item[] } {
    const [kind, body] = unwrap(node) ?? ['', {}];
    switch (kind) {
      case 'RangeVar': {
        const item = this.rangeVar(level, body);
        return { top: item, ns: [item] };
      }
      case 'RangeSubselect': {
        const sub = unwrap(body.subquery)?.[1] as SelectStmt | undefined;
        if (sub === undefined) this.refuse('unresolved_reference', 'a subquery in FROM');
        const outputs = this.query(sub, level, body.lateral === true, level.ctes);
        const alias = body.alias as Node | undefined;
        const { columns, open } = itemColumns(rename(outputs, alias?.colnames));
        const refname = typeof alias?.aliasname === 'string' ? alias.aliasname : undefined;
        const item: Item = {
          refname,
          columns,
          open,
          relVisible: refname !== undefined,
          colsVisible: true,
          shown: `the subquery ${refname ?? ''}`.trim(),
        };
        return { top: item, ns: [item] };
      }
      case 'RangeFunction': {
        const item = this.rangeFunction(level, body);
        return { top: item, ns: [item] };
      }
      case 'RangeTableFunc':
      case 'JsonTable': {
        // XMLTABLE / JSON_TABLE: their arguments are expressions (LATERAL); their columns carry
        // no masked value (they are computed from those arguments).
        this.expr(
          { ...body, alias: undefined },
          level,
          `${kind === 'JsonTable' ? 'JSON_TABLE' : 'XMLTABLE'}`,
          true,
        );
        const alias = body.alias as Node | undefined;
        const declared =
          kind === 'RangeTableFunc'
            ? ((body.columns as unknown[] | undefined) ?? []).map((c) => ({
                name: stringOf(unwrap(c)?.[1].colname),
                value: CLEAN,
              }))
            : [];
        const refname = typeof alias?.aliasname === 'string' ? alias.aliasname : undefined;
        const item: Item = {
          refname,
          columns: rename(declared, alias?.colnames),
          open: kind === 'JsonTable',
          relVisible: refname !== undefined,
          colsVisible: true,
          shown: refname ?? kind,
        };
        return { top: item, ns: [item] };
      }
      case 'RangeTableSample': {
        this.expr(body.args, level, 'TABLESAMPLE', true);
        this.expr(body.repeatable, level, 'TABLESAMPLE', true);
        return this.fromItem(level, body.relation);
      }
      case 'JoinExpr':
        return this.join(level, body);
      default:
        return this.refuse('unresolved_reference', `a FROM item of kind ${kind || 'unknown'}`);
    }
  }

  /** A table, view, sequence, catalog or CTE named in FROM. */
  private rangeVar(level: Level, rv: RangeVar): Item {
    const name = rv.relname ?? '';
    const alias = rv.alias;
    const refname = alias?.aliasname ?? name;
    if (rv.schemaname === undefined) {
      const cte = this.findCte(level.ctes, name);
      if (cte !== undefined) {
        const { columns, open } = itemColumns(rename(cte.resolve(), alias?.colnames));
        return {
          refname,
          columns,
          open,
          relVisible: true,
          colsVisible: true,
          shown: `CTE ${name}`,
        };
      }
    }
    if (rv.catalogname !== undefined && rv.catalogname !== this.catalog.database) {
      // PostgreSQL refuses cross-database references itself.
      return this.openItem(refname, name);
    }
    const info = this.lookup(rv.schemaname, name);
    if (info === undefined) return this.openItem(refname, name);
    if (info === null) {
      // PostgreSQL will answer "relation does not exist"; inside a view it means this check's
      // catalog and PostgreSQL's disagree.
      if (this.views.length > 0) {
        this.refuse('unresolved_reference', `the relation ${name} could not be found`);
      }
      return this.openItem(refname, name);
    }
    const shown = this.named(info.schema, info.name);
    const view = this.views[0];
    if (view === undefined && !this.catalog.allowed.has(info.schema)) {
      this.refuse(
        SYSTEM_CATALOG(info.schema) ? 'system_catalog' : 'schema_not_allowed',
        `${shown} is outside the allowed schemas (${[...this.catalog.allowed].join(', ')})${SYSTEM_CATALOG(info.schema) ? ': it is a system catalog' : ''}. Use postgres_list_tables and postgres_describe_table for what is available`,
      );
    }
    this.relations.push(
      view === undefined ? { info } : { info, through: `${view.schema}.${view.name}` },
    );
    const columns = this.relationColumns(info).map((c) => ({ ...c }));
    const anyMasked = columns.some(
      (c) => c.value.masked.length > 0 || c.value.derived !== undefined,
    );
    if (anyMasked) this.maskedInReach = true;
    for (const attnum of info.policyColumns) {
      const masked = this.catalog.masked(info.oid, attnum);
      if (masked !== undefined) {
        this.refuse(
          'masked_column',
          `a row-security policy of ${shown} filters its rows on the masked column ${masked.column}${this.where()}, so which rows it shows would reveal masked values`,
          'the view {view} reads a relation whose row-security policy filters its rows on a masked column, so which rows it shows would reveal masked values',
        );
      }
    }
    // A masked partition key chooses each partition's rows, and orders a scan of the partitioned
    // table (its partitions come one after the other): neither can be read without telling it.
    const key = this.maskedKey(info, [...info.partitionKey, ...info.ancestorKeys]);
    if (key !== undefined) {
      this.refuse(
        'masked_column',
        `${shown} is partitioned${info.ancestorKeys.length > 0 ? ' (as a partition of its table)' : ''} by the masked column ${key}${this.where()}: which partition a row is in, and the order a scan returns rows in, would reveal it`,
        'the view {view} reads a relation partitioned by a masked column: which partition a row is in, and the order a scan returns rows in, would reveal it',
      );
    }
    const system = new Map<string, Value>();
    if (info.kind !== 'v') {
      for (const c of ['xmin', 'xmax', 'cmin', 'cmax']) system.set(c, CLEAN);
      // A row's physical position depends on the size of every value before it.
      system.set(
        'ctid',
        anyMasked
          ? {
              masked: [
                `${shown}.ctid (the row's position on disk, which the masked values' sizes move)`,
              ],
            }
          : CLEAN,
      );
      system.set('tableoid', CLEAN);
    }
    return {
      refname,
      ...(alias === undefined ? { relation: { schema: info.schema, name: info.name } } : {}),
      columns: rename(columns, alias?.colnames),
      open: false,
      relVisible: true,
      colsVisible: true,
      system,
      shown,
    };
  }

  /** A masked column among partition key columns (`''`: a key expression). */
  private maskedKey(info: RelationInfo, keys: readonly string[]): string | undefined {
    for (const key of keys) {
      const column = key === '' ? undefined : info.columns.find((c) => c.name === key);
      if (key === '') {
        // A key expression: masked if the relation has any masked column at all.
        const any = info.columns.find((c) => this.catalog.masked(info.oid, c.attnum) !== undefined);
        if (any !== undefined) return `${any.name} (through a key expression)`;
      } else if (column !== undefined && this.catalog.masked(info.oid, column.attnum)) {
        return column.name;
      }
    }
    return undefined;
  }

  /** An item whose columns are not known (it carries no masked value). */
  private openItem(refname: string, name: string): Item {
    return { refname, columns: [], open: true, relVisible: true, colsVisible: true, shown: name };
  }

  /**
   * The relation `schema.name`, or the first of the search path that has `name`: undefined when
   * the catalog has not been asked yet, null when there is none.
   */
  private lookup(schema: string | undefined, name: string): RelationInfo | null | undefined {
    for (const s of schema === undefined ? this.catalog.searchPath : [schema]) {
      const info = this.catalog.relation(s, name);
      if (info === undefined) {
        this.missing.add(relationKey(s, name));
        return undefined;
      }
      if (info !== null) return info;
    }
    return null;
  }

  /** A relation's columns with what each carries: its own mask, or its view definition's. */
  relationColumns(info: RelationInfo): Column[] {
    const own = (attnum: number): Value => {
      const masked = this.catalog.masked(info.oid, attnum);
      if (masked === undefined) return CLEAN;
      const label = this.named(masked.schema, masked.table, masked.column);
      // A virtual generated column computes the masked value's function when it is read.
      if (masked.generated === 'virtual') {
        return {
          masked: [],
          derived: `computed by the generated column ${label} from the masked column ${this.named(masked.schema, masked.table, masked.source ?? '')}`,
        };
      }
      return { masked: [label] };
    };
    if (info.kind !== 'v' && info.kind !== 'm') {
      return info.columns.map((c) => ({ name: c.name, value: own(c.attnum) }));
    }
    const defined = this.view(info);
    return info.columns.map((c, i) => {
      let value = merge([own(c.attnum), defined[i]?.value ?? CLEAN]);
      // A materialized view stores what it computed: a value computed from a masked column is
      // masked like one (reading it computes nothing).
      if (info.kind === 'm' && value.derived !== undefined) {
        value = { masked: [...value.masked, this.named(info.schema, info.name, c.name)] };
      }
      if (value.masked.length > 0 && value.derived === undefined) {
        this.maskedOrigins.add(`${info.oid}:${c.attnum}`);
      }
      return { name: c.name, value };
    });
  }

  /** A view's (or materialized view's) definition, resolved: what each output column carries. */
  private view(info: RelationInfo): readonly Column[] {
    const known = this.viewCache.get(info.oid);
    if (known !== undefined) return known;
    const shown = this.named(info.schema, info.name);
    if (this.views.some((v) => v.oid === info.oid)) {
      this.refuse('unresolved_reference', `the view ${shown} refers to itself`);
    }
    if (info.definition === undefined) {
      this.refuse('unresolved_reference', `the definition of the view ${shown} could not be read`);
    }
    this.views.push(info);
    let outputs: Output[];
    const before = this.missing.size;
    try {
      outputs = this.query(info.definition, undefined, false, undefined);
    } finally {
      this.views.pop();
    }
    if (this.missing.size > before)
      return info.columns.map((c) => ({ name: c.name, value: CLEAN }));
    const exact = outputs.filter((o) => o.unknown !== true);
    if (exact.length !== outputs.length || exact.length !== info.columns.length) {
      this.refuse(
        'unresolved_reference',
        `the columns of the view ${shown} could not be matched to its definition`,
      );
    }
    this.viewCache.set(info.oid, exact);
    return exact;
  }

  /** A function in FROM (or ROWS FROM): its arguments are used; its columns are its own. */
  private rangeFunction(level: Level, body: Node): Item {
    const alias = body.alias as Node | undefined;
    let known: Column[] = [];
    let open = false;
    let firstName: string | undefined;
    for (const list of (body.functions as unknown[] | undefined) ?? []) {
      const [fn, defs] = (unwrap(list)?.[1].items as unknown[] | undefined) ?? [];
      // Functions in FROM are LATERAL: they see the FROM items before them.
      this.expr(fn, level, 'a function in FROM', true);
      firstName ??= figureColname(fn).name;
      const coldefs = (unwrap(defs)?.[1].items as unknown[] | undefined) ?? [];
      if (coldefs.length > 0) {
        known.push(
          ...coldefs.map((d) => ({ name: stringOf(unwrap(d)?.[1].colname), value: CLEAN })),
        );
      } else {
        open = true;
      }
    }
    const coldeflist = (body.coldeflist as unknown[] | undefined) ?? [];
    if (coldeflist.length > 0) {
      known = coldeflist.map((d) => ({ name: stringOf(unwrap(d)?.[1].colname), value: CLEAN }));
      open = false;
    }
    if (body.ordinality === true) {
      if (open) known = [];
      else known.push({ name: 'ordinality', value: CLEAN });
    }
    const refname = typeof alias?.aliasname === 'string' ? alias.aliasname : firstName;
    const given = nameList(alias?.colnames);
    if (open) {
      // Columns not known; the names an alias gives them are.
      known = given.map((name) => ({ name, value: CLEAN }));
    } else {
      known = rename(known, alias?.colnames);
    }
    return {
      refname,
      columns: known,
      open,
      relVisible: true,
      colsVisible: true,
      shown: `the function ${firstName ?? ''} in FROM`.replace('  ', ' '),
    };
  }

  /** A JOIN: its inputs, its USING/NATURAL merged columns and ON condition, its alias. */
  private join(level: Level, join: JoinExpr): { top: Item; ns: Item[] } {
    const left = this.fromItem(level, join.larg);
    // The right side sees the left side as LATERAL-only (and the FROM list's earlier items).
    const pushed: Entry[] = left.ns.map((item) => ({ item, lateralOnly: true }));
    level.entries.push(...pushed);
    let right: { top: Item; ns: Item[] };
    try {
      right = this.fromItem(level, join.rarg);
    } finally {
      level.entries.splice(level.entries.length - pushed.length, pushed.length);
    }
    let merged = nameList(join.usingClause);
    if (join.isNatural === true) {
      if (left.top.open || right.top.open) {
        for (const side of [left.top, right.top]) {
          for (const c of side.columns) this.use(c.value, c.name ?? 'a column', 'a NATURAL JOIN');
        }
      }
      const rightNames = new Set(right.top.columns.map((c) => c.name));
      merged = left.top.columns
        .map((c) => c.name)
        .filter((n): n is string => n !== undefined && rightNames.has(n));
    }
    for (const name of merged) {
      for (const side of [left.top, right.top]) {
        for (const c of side.columns.filter((col) => col.name === name)) {
          this.use(
            c.value,
            name,
            join.isNatural === true ? 'a NATURAL JOIN' : `JOIN … USING (${name})`,
          );
        }
      }
    }
    // ON sees exactly the join's two inputs (and the enclosing query levels).
    const on: Level = {
      entries: [...left.ns, ...right.ns].map((item) => ({ item, lateralOnly: false })),
      parent: level.parent,
      lateral: level.lateral,
      ctes: level.ctes,
    };
    this.expr(join.quals, on, 'a JOIN … ON condition');
    const mergedSet = new Set(merged);
    const columns: Column[] = [
      ...merged.map((name) => ({ name, value: CLEAN })),
      ...left.top.columns.filter((c) => c.name === undefined || !mergedSet.has(c.name)),
      ...right.top.columns.filter((c) => c.name === undefined || !mergedSet.has(c.name)),
    ];
    const alias = join.alias;
    const top: Item = {
      refname: alias?.aliasname,
      columns: rename(columns, alias?.colnames),
      open: left.top.open || right.top.open,
      relVisible: alias !== undefined,
      colsVisible: true,
      shown: alias?.aliasname === undefined ? 'a join' : `the join ${alias.aliasname}`,
    };
    if (alias !== undefined) return { top, ns: [top] };
    const hidden = [...left.ns, ...right.ns].map((item) => ({ ...item, colsVisible: false }));
    const usingAlias = join.join_using_alias?.aliasname;
    const extra: Item[] =
      usingAlias === undefined
        ? []
        : [
            {
              refname: usingAlias,
              columns: merged.map((name) => ({ name, value: CLEAN })),
              open: false,
              relVisible: true,
              colsVisible: false,
              shown: usingAlias,
            },
          ];
    return { top, ns: [...hidden, top, ...extra] };
  }

  // ─── target lists and clauses ───────────────────────────────────────────────────────────

  /** The SELECT list: plain columns and stars pass their values through; the rest is used. */
  private targets(list: readonly unknown[], level: Level): Output[] {
    const outputs: Output[] = [];
    const inView = this.views.length > 0;
    for (const node of list) {
      const target = unwrap(node)?.[1];
      if (target === undefined) continue;
      const alias = typeof target.name === 'string' ? target.name : undefined;
      const [kind, body] = unwrap(target.val) ?? ['', {}];
      if (kind === 'ColumnRef') {
        const fields = nameList(body.fields);
        if (fields.at(-1) === '*') {
          outputs.push(...this.star(fields, level));
          continue;
        }
        const found = this.columnRef(body, level, false);
        const name = alias ?? fields.at(-1);
        if (found.kind === 'column') {
          outputs.push({ name, value: this.read(found.value, fields.join('.')) });
        } else {
          // A whole row or a function over it (`t`, `t.f`) is a computed value.
          this.use(found.value, fields.join('.'), 'a whole-row value or a function of it');
          outputs.push({ name, value: CLEAN });
        }
        continue;
      }
      const name = alias ?? figureColname(target.val).name;
      if (inView) {
        // A view's computed column: what it computes from a masked value cannot be read.
        const collected: Value[] = [];
        this.expr(target.val, level, 'an expression of the SELECT list', false, collected);
        const from = merge(collected);
        const view = this.views.at(-1)!;
        outputs.push({
          name,
          value:
            from.masked.length === 0 && from.derived === undefined
              ? CLEAN
              : {
                  masked: [],
                  derived:
                    from.derived ??
                    `computed from the masked column ${from.masked.join(', ')} by the view ${this.named(view.schema, view.name)}`,
                },
        });
      } else {
        this.expr(target.val, level, 'an expression of the SELECT list');
        outputs.push({ name, value: CLEAN });
      }
    }
    return outputs;
  }

  /** `*` or `t.*` in a SELECT list: the columns of the items it stands for. */
  private star(fields: readonly string[], level: Level): Output[] {
    const items =
      fields.length === 1
        ? level.entries.filter((e) => e.item.colsVisible).map((e) => e.item)
        : this.findItems(fields.slice(0, -1), level, false);
    if (items.length === 0) {
      this.unresolved.push(fields.join('.'));
      return [{ name: undefined, value: CLEAN, unknown: true }];
    }
    const outputs: Output[] = [];
    for (const item of items) {
      for (const c of item.columns) {
        outputs.push({ name: c.name, value: this.read(c.value, `${item.shown}.${c.name ?? '?'}`) });
      }
      if (item.open) outputs.push({ name: undefined, value: CLEAN, unknown: true });
    }
    return outputs;
  }

  /** The outputs at a 1-based position (any after an unknown stretch may be it). */
  private outputsAt(outputs: readonly Output[], position: number): Output[] {
    const firstUnknown = outputs.findIndex((o) => o.unknown === true);
    if (firstUnknown === -1 || position <= firstUnknown) {
      const out = outputs[position - 1];
      return out === undefined ? [] : [out];
    }
    return outputs.slice(firstUnknown);
  }

  /**
   * An ORDER BY / DISTINCT ON key: a position, an output column's name (or an input column's:
   * both are taken), or an expression over the input columns.
   */
  private sortKey(node: unknown, outputs: readonly Output[], level: Level, sink: string): void {
    const [kind, body] = unwrap(node) ?? ['', {}];
    if (kind === 'A_Const' && isNode(body.ival)) {
      const position = Number(body.ival.ival ?? 0);
      for (const out of this.outputsAt(outputs, position)) {
        this.use(out.value, `${sink} ${position} (${out.name ?? 'a column'})`, sink);
      }
      return;
    }
    if (kind === 'ColumnRef') {
      const fields = nameList(body.fields);
      if (fields.length === 1 && fields[0] !== '*') {
        const named = outputs.filter((o) => o.name === fields[0] || o.unknown === true);
        for (const out of named) this.use(out.value, fields[0]!, sink);
        // PostgreSQL takes the output column for ORDER BY, the input column first for GROUP BY;
        // both are checked either way, and the input column need not exist when an output has
        // the name.
        this.refUse(body, level, false, sink, undefined, named.length > 0);
        return;
      }
    }
    this.expr(node, level, sink);
  }

  private groupKey(node: unknown, outputs: readonly Output[], level: Level): void {
    const [kind, body] = unwrap(node) ?? ['', {}];
    if (kind === 'GroupingSet') {
      for (const item of (body.content as unknown[] | undefined) ?? []) {
        this.groupKey(item, outputs, level);
      }
      return;
    }
    this.sortKey(node, outputs, level, 'GROUP BY');
  }

  /** A window (named in WINDOW, or inline in OVER): what it partitions and orders by is used. */
  private windowDef(def: Node | undefined, level: Level, lateral = false, collect?: Value[]): void {
    if (def === undefined) return;
    this.expr(def.partitionClause, level, 'a window (PARTITION BY)', lateral, collect);
    for (const sort of (def.orderClause as unknown[] | undefined) ?? []) {
      this.expr(unwrap(sort)?.[1].node, level, 'a window (ORDER BY)', lateral, collect);
    }
    this.expr([def.startOffset, def.endOffset], level, 'a window frame', lateral, collect);
  }

  // ─── expressions and references ─────────────────────────────────────────────────────────

  /**
   * An expression: every column it references is used (refused if masked), every subquery in it
   * resolved as a level below this one. With `collect`, masked values are collected instead.
   */
  private expr(
    node: unknown,
    level: Level,
    sink: string,
    lateral = false,
    collect?: Value[],
  ): void {
    if (node === undefined || node === null) return;
    if (Array.isArray(node)) {
      for (const item of node) this.expr(item, level, sink, lateral, collect);
      return;
    }
    if (!isNode(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (!isNode(value)) {
        if (Array.isArray(value)) this.expr(value, level, sink, lateral, collect);
        continue;
      }
      switch (key) {
        case 'ColumnRef':
          this.refUse(value, level, lateral, sink, collect, false);
          break;
        case 'SubLink':
          this.subLink(value, level, lateral, sink, collect);
          break;
        case 'SelectStmt': {
          const outputs = this.query(value, level, lateral, level.ctes);
          for (const out of outputs) this.use(out.value, out.name ?? 'a column', sink, collect);
          break;
        }
        case 'FuncCall':
          this.expr([value.args, value.agg_order, value.agg_filter], level, sink, lateral, collect);
          this.windowDef(value.over as Node | undefined, level, lateral, collect);
          break;
        case 'RangeVar':
        case 'RangeSubselect':
        case 'RangeFunction':
        case 'JoinExpr':
          this.refuse('unresolved_reference', `a ${key} inside an expression`);
          break;
        default:
          this.expr(value, level, sink, lateral, collect);
      }
    }
  }

  /** A subquery in an expression: its result (unless EXISTS) is used. */
  private subLink(
    link: SubLink,
    level: Level,
    lateral: boolean,
    sink: string,
    collect: Value[] | undefined,
  ): void {
    this.expr(link.testexpr, level, sink, lateral, collect);
    const sub = unwrap(link.subselect)?.[1] as SelectStmt | undefined;
    if (sub === undefined) return;
    const outputs = this.query(sub, level, lateral, level.ctes);
    if (link.subLinkType === 'EXISTS_SUBLINK') return;
    for (const out of outputs) {
      this.use(out.value, out.name ?? 'a column', `a subquery's result (${sink})`, collect);
    }
  }

  /** A column reference in an expression: whatever it resolves to is used. */
  private refUse(
    ref: ColumnRef,
    level: Level,
    lateral: boolean,
    sink: string,
    collect: Value[] | undefined,
    optional: boolean,
  ): void {
    const fields = nameList(ref.fields);
    const shown = fields.join('.');
    if (fields.at(-1) === '*') {
      const items =
        fields.length === 1
          ? level.entries.filter((e) => e.item.colsVisible && !e.lateralOnly).map((e) => e.item)
          : this.findItems(fields.slice(0, -1), level, lateral);
      if (items.length === 0) this.unresolved.push(shown);
      for (const item of items) {
        this.use(this.wholeRow(item), shown, `${sink} (as a whole-row value)`, collect);
      }
      return;
    }
    const found = this.columnRef(ref, level, lateral, optional);
    if (found.kind === 'column') this.read(found.value, shown);
    this.use(
      found.value,
      shown,
      found.kind === 'column' ? sink : `${sink} (as a whole-row value)`,
      collect,
    );
  }

  private wholeRow(item: Item): Value {
    return merge(item.columns.map((c) => c.value));
  }

  /**
   * What a column reference denotes (PostgreSQL's transformColumnRef): `a` a column (innermost
   * level first), else a whole row; `t.c` a column of t, else the function c applied to t's
   * row; `s.t.c` and `db.s.t.c` the same for an unaliased relation. Every possibility is kept.
   */
  private columnRef(
    ref: ColumnRef,
    level: Level,
    lateral: boolean,
    optional = false,
  ): { kind: 'column' | 'row'; value: Value } {
    const fields = nameList(ref.fields);
    const shown = fields.join('.');
    if (fields.length === 1) {
      const { hits, maybe } = this.findColumn(fields[0]!, level, lateral);
      if (hits.length > 0) return { kind: 'column', value: merge(hits) };
      const items = this.findItems(fields, level, lateral);
      if (items.length > 0)
        return { kind: 'row', value: merge(items.map((i) => this.wholeRow(i))) };
      if (!maybe && !optional) this.unresolved.push(shown);
      return { kind: 'column', value: CLEAN };
    }
    let qualifier = fields.slice(0, -1);
    if (fields.length === 4) {
      if (fields[0] !== this.catalog.database) return { kind: 'column', value: CLEAN };
      qualifier = fields.slice(1, 3);
    }
    if (fields.length > 4) return { kind: 'column', value: CLEAN };
    const name = fields.at(-1)!;
    const items = this.findItems(qualifier, level, lateral);
    if (items.length === 0) {
      if (!optional) this.unresolved.push(shown);
      return { kind: 'column', value: CLEAN };
    }
    const values: Value[] = [];
    let row = false;
    for (const item of items) {
      const columns = item.columns.filter((c) => c.name === name);
      const system = item.system?.get(name);
      if (columns.length > 0) values.push(...columns.map((c) => c.value));
      else if (system !== undefined) values.push(system);
      else if (this.catalog.isFunction(name)) {
        // Not a column: functional notation, `name(t)` on t's whole row (PostgreSQL also takes
        // this road for an open item whose columns it knows and this check does not).
        this.columnFunctions.add(name);
        values.push(this.wholeRow(item));
        row = !item.open;
      } else if (!item.open && !optional) {
        this.unresolved.push(shown);
      }
    }
    return { kind: row ? 'row' : 'column', value: merge(values) };
  }

  /**
   * The columns named `name` visible from `level`: the innermost level that has one (items an
   * open function item might also provide there count as clean possibilities, and the search
   * goes on outward for them).
   */
  private findColumn(
    name: string,
    level: Level,
    lateral: boolean,
  ): { hits: Value[]; maybe: boolean } {
    const hits: Value[] = [];
    let maybe = false;
    let seesLateral = lateral;
    for (let l: Level | undefined = level; l !== undefined; l = l.parent) {
      for (const entry of l.entries) {
        if (!entry.item.colsVisible || (entry.lateralOnly && !seesLateral)) continue;
        for (const c of entry.item.columns) if (c.name === name) hits.push(c.value);
        const system = entry.item.system?.get(name);
        if (system !== undefined) hits.push(system);
        if (entry.item.open) maybe = true;
      }
      if (hits.length > 0) return { hits: maybe ? [...hits, CLEAN] : hits, maybe };
      seesLateral = l.lateral;
    }
    return { hits, maybe };
  }

  /** The items a qualifier (`t`, or `schema.t`) names, at the innermost level that has one. */
  private findItems(qualifier: readonly string[], level: Level, lateral: boolean): Item[] {
    let seesLateral = lateral;
    for (let l: Level | undefined = level; l !== undefined; l = l.parent) {
      const found = l.entries
        .filter((e) => e.item.relVisible && (!e.lateralOnly || seesLateral))
        .map((e) => e.item)
        .filter((item) =>
          qualifier.length === 1
            ? item.refname === qualifier[0]
            : item.relation !== undefined &&
              item.relation.schema === qualifier[0] &&
              item.relation.name === qualifier[1],
        );
      if (found.length > 0) return found;
      seesLateral = l.lateral;
    }
    return [];
  }
}
