import { SqlRefusedError } from './guard.js';

/**
 * Values a statement would make PostgreSQL build past what this server reads
 * (docs/adr/0024-huge-values.md). The size of every value the constants determine —
 * `repeat('x', 100000000)`, `repeat(repeat('x', 10000), 20000)`, `lpad('x', 200000000)`,
 * `array_fill(0, ARRAY[100000, 1000])`, `string_agg(…)` over the rows a constant
 * `generate_series` makes, directly or through a subquery, a CTE, a join or a set operation —
 * is estimated from them, and a statement with one over the limit is refused before PostgreSQL
 * builds it (a value costs the backend several times its size while it builds, converts and
 * sends it). A value no constant sizes counts as one byte where it is repeated or aggregated, so
 * a repetition count over the limit is refused whatever it repeats. At the catalog stage a
 * table's rows count as the planner estimates them (`pg_class.reltuples`). What neither tells
 * is bounded at run time: this process never reads a message over the limit (frame-guard.ts),
 * and the statement timeout stops the rest.
 */

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Aggregates whose result holds every input value (their size grows with the rows). */
const CONCATENATING = new Set([
  'string_agg',
  'array_agg',
  'json_agg',
  'jsonb_agg',
  'json_agg_strict',
  'jsonb_agg_strict',
  'json_object_agg',
  'jsonb_object_agg',
  'json_object_agg_strict',
  'jsonb_object_agg_strict',
  'json_object_agg_unique',
  'jsonb_object_agg_unique',
  'json_object_agg_unique_strict',
  'jsonb_object_agg_unique_strict',
  'json_arrayagg',
  'json_objectagg',
  'xmlagg',
  'range_agg',
  'multirange_agg',
]);

/** Functions of a SELECT list known to return one value per row (not a set). */
const SCALAR = new Set([
  'md5',
  'repeat',
  'lpad',
  'rpad',
  'concat',
  'concat_ws',
  'lower',
  'upper',
  'left',
  'right',
  'substr',
  'substring',
  'format',
  'coalesce',
  'length',
  'abs',
  'round',
  'now',
  'random',
  'to_char',
]);

/** What a query (or a FROM item) makes: at most how many rows, and its columns' sizes. */
interface Shape {
  readonly rows: number | undefined;
  readonly columns: ReadonlyArray<readonly [string | undefined, number | undefined]>;
}

const UNKNOWN: Shape = { rows: undefined, columns: [] };

function nameOf(fn: Node): string {
  const parts = (fn.funcname as Node[] | undefined) ?? [];
  const last = parts.at(-1);
  const sval = isNode(last) && isNode(last.String) ? last.String.sval : undefined;
  return typeof sval === 'string' ? sval.toLowerCase() : '';
}

/** The svals of a name list (`fields` of a ColumnRef, `colnames` of an alias). */
function strings(list: unknown): string[] {
  return Array.isArray(list)
    ? list.map((item) =>
        isNode(item) && isNode(item.String) && typeof item.String.sval === 'string'
          ? item.String.sval
          : '*',
      )
    : [];
}

/** The names of the functions an expression calls, outside its subqueries. */
function callsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) callsIn(item, found);
  } else if (isNode(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'SubLink') continue;
      if (key === 'FuncCall' && isNode(inner)) found.push(nameOf(inner));
      callsIn(inner, found);
    }
  }
  return found;
}

/** The number a constant stands for (an integer or a decimal literal), if it is one. */
function numberOf(node: unknown): number | undefined {
  if (!isNode(node)) return undefined;
  if (isNode(node.TypeCast)) return numberOf(node.TypeCast.arg);
  const value = isNode(node.A_Const) ? node.A_Const : undefined;
  if (value === undefined) return undefined;
  if (isNode(value.ival)) return Number(value.ival.ival ?? 0);
  if (isNode(value.fval)) return Number(value.fval.fval);
  if (isNode(value.sval) && typeof value.sval.sval === 'string' && value.sval.sval.trim() !== '') {
    const n = Number(value.sval.sval);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

const MB = (n: number) => `${Math.round((n / 1024 / 1024) * 10) / 10} MB`;

/**
 * Refuses the statement if a value it builds would exceed `limit` bytes by the estimate above.
 * `tableRows` (the catalog stage) gives a table's estimated rows.
 */
export function checkSizes(
  select: unknown,
  limit: number,
  tableRows?: (schema: string | undefined, name: string) => number | undefined,
): void {
  new Sizes(limit, tableRows).query(select as Node);
}

class Sizes {
  /** The query levels being walked, innermost last: their rows and their FROM's columns. */
  private readonly levels: Shape[] = [];
  /** The CTEs in scope, by name (innermost last). */
  private readonly ctes: Array<Map<string, Shape>> = [];

  constructor(
    private readonly limit: number,
    private readonly tableRows?: (schema: string | undefined, name: string) => number | undefined,
  ) {}

  private refuse(what: string, bytes: number): never {
    throw new SqlRefusedError(
      'value_size',
      `${what} would build a value of about ${bytes > 1e12 ? 'more than a TB' : MB(bytes)} inside PostgreSQL, more than the ${MB(this.limit)} this server reads. Build smaller values, or aggregate them (count, sum, length) without building them.`,
    );
  }

  private count(what: string, n: number | undefined): number | undefined {
    if (n !== undefined && n > this.limit) this.refuse(what, n);
    return n === undefined ? undefined : Math.max(0, n);
  }

  private checked(what: string, bytes: number | undefined): number | undefined {
    if (bytes !== undefined && bytes > this.limit) this.refuse(what, bytes);
    return bytes;
  }

  /** A query level: its CTEs, its FROM, then everything else with the FROM's columns known. */
  query(stmt: Node): Shape {
    if (stmt.op !== undefined && stmt.op !== 'SETOP_NONE') {
      return this.scoped(stmt, () => {
        const left = this.query(stmt.larg as Node);
        const right = this.query(stmt.rarg as Node);
        return {
          rows:
            left.rows === undefined || right.rows === undefined
              ? undefined
              : left.rows + right.rows,
          columns: left.columns.map(([name, size], i) => {
            const other = right.columns[i]?.[1];
            return [
              name,
              size === undefined || other === undefined ? undefined : Math.max(size, other),
            ];
          }),
        };
      });
    }
    return this.scoped(stmt, () => {
      const values = stmt.valuesLists as unknown[] | undefined;
      if (values !== undefined) {
        const rows = values.map((row) => {
          const items = isNode(row) && isNode(row.List) ? (row.List.items as unknown[]) : [];
          return items.map((item) => this.walk(item));
        });
        return {
          rows: values.length,
          columns: (rows[0] ?? []).map((_, i) => [
            `column${i + 1}`,
            this.widest(rows.map((r) => r[i])),
          ]),
        };
      }
      const from = this.from(stmt.fromClause);
      this.levels.push(from);
      try {
        for (const [key, inner] of Object.entries(stmt)) {
          if (key !== 'fromClause' && key !== 'withClause' && key !== 'targetList')
            this.walk(inner);
        }
        const columns = ((stmt.targetList as Node[] | undefined) ?? []).map((entry) => {
          const target = isNode(entry.ResTarget) ? entry.ResTarget : {};
          const val = target.val;
          const size = this.walk(val);
          const fields = isNode(val) && isNode(val.ColumnRef) ? strings(val.ColumnRef.fields) : [];
          const name = typeof target.name === 'string' ? target.name : fields.at(-1);
          return [name, size] as const;
        });
        // A function in the SELECT list may return a set; only known scalars are let through.
        const sets = callsIn(stmt.targetList).some(
          (name) => !SCALAR.has(name) && !CONCATENATING.has(name),
        );
        const rows = sets || from.rows === undefined ? undefined : Math.max(1, from.rows);
        return { rows, columns };
      } finally {
        this.levels.pop();
      }
    });
  }

  /** Runs `fn` with the query's CTEs in scope. */
  private scoped<T>(stmt: Node, fn: () => T): T {
    const clause = isNode(stmt.withClause) ? stmt.withClause : undefined;
    if (clause === undefined) return fn();
    const scope = new Map<string, Shape>();
    this.ctes.push(scope);
    try {
      for (const entry of (clause.ctes as Node[] | undefined) ?? []) {
        const cte = isNode(entry.CommonTableExpr) ? entry.CommonTableExpr : undefined;
        const query = (cte?.ctequery as Node | undefined)?.SelectStmt as Node | undefined;
        if (cte === undefined || typeof cte.ctename !== 'string') continue;
        const shape = query === undefined ? (this.walk(cte.ctequery), UNKNOWN) : this.query(query);
        // A recursive CTE makes as many rows as its recursion does.
        scope.set(cte.ctename, clause.recursive === true ? { ...shape, rows: undefined } : shape);
      }
      return fn();
    } finally {
      this.ctes.pop();
    }
  }

  /** The FROM list: the product of its items' rows, and their columns. */
  private from(list: unknown): Shape {
    if (!Array.isArray(list) || list.length === 0) return { rows: 1, columns: [] };
    let rows: number | undefined = 1;
    const columns: Array<readonly [string | undefined, number | undefined]> = [];
    for (const item of list) {
      const shape = this.item(item);
      rows = rows === undefined || shape.rows === undefined ? undefined : rows * shape.rows;
      columns.push(...shape.columns);
    }
    return { rows, columns };
  }

  private item(item: unknown): Shape {
    if (!isNode(item)) return UNKNOWN;
    if (isNode(item.RangeVar)) {
      const rv = item.RangeVar;
      const name = String(rv.relname);
      const renamed = (shape: Shape) => this.renamed(shape, rv.alias);
      if (rv.schemaname === undefined) {
        for (const scope of [...this.ctes].reverse()) {
          const cte = scope.get(name);
          if (cte !== undefined) return renamed(cte);
        }
      }
      const rows = this.tableRows?.(
        typeof rv.schemaname === 'string' ? rv.schemaname : undefined,
        name,
      );
      return { rows: rows === undefined ? undefined : Math.ceil(rows), columns: [] };
    }
    if (isNode(item.JoinExpr)) {
      const join = item.JoinExpr;
      const left = this.item(join.larg);
      const right = this.item(join.rarg);
      this.levels.push({ rows: undefined, columns: [...left.columns, ...right.columns] });
      try {
        this.walk(join.quals);
      } finally {
        this.levels.pop();
      }
      return {
        rows:
          left.rows === undefined || right.rows === undefined
            ? undefined
            : left.rows * Math.max(1, right.rows),
        columns: [...left.columns, ...right.columns],
      };
    }
    if (isNode(item.RangeSubselect)) {
      const sub = item.RangeSubselect;
      const stmt = (sub.subquery as Node | undefined)?.SelectStmt as Node | undefined;
      return stmt === undefined ? UNKNOWN : this.renamed(this.query(stmt), sub.alias);
    }
    if (isNode(item.RangeFunction)) {
      const lists = (item.RangeFunction.functions as Node[] | undefined) ?? [];
      const calls = lists.map(
        (list) => ((list.List as Node | undefined)?.items as Node[] | undefined)?.[0],
      );
      for (const call of calls) this.walk(call);
      const call = calls.length === 1 && isNode(calls[0]?.FuncCall) ? calls[0].FuncCall : undefined;
      return { rows: call === undefined ? undefined : this.setRows(call), columns: [] };
    }
    this.walk(item);
    return UNKNOWN;
  }

  /** The rows a set-returning function makes from constants: generate_series, unnest. */
  private setRows(call: Node): number | undefined {
    const args = (call.args as unknown[] | undefined) ?? [];
    if (nameOf(call) === 'generate_series') {
      const [start, stop, step = 1] = args.map(numberOf);
      if (start === undefined || stop === undefined || step === undefined || step === 0) {
        return undefined;
      }
      return Math.max(0, Math.floor((stop - start) / step) + 1);
    }
    const array = args[0];
    if (
      nameOf(call) === 'unnest' &&
      args.length === 1 &&
      isNode(array) &&
      isNode(array.A_ArrayExpr)
    ) {
      return ((array.A_ArrayExpr.elements as unknown[] | undefined) ?? []).length;
    }
    return undefined;
  }

  /** A shape under an alias's column names (given in order). */
  private renamed(shape: Shape, alias: unknown): Shape {
    const names = isNode(alias) ? strings(alias.colnames) : [];
    if (names.length === 0) return shape;
    return {
      rows: shape.rows,
      columns: shape.columns.map(([name, size], i) => [names[i] ?? name, size] as const),
    };
  }

  private widest(sizes: ReadonlyArray<number | undefined>): number | undefined {
    return sizes.some((s) => s === undefined) ? undefined : Math.max(0, ...(sizes as number[]));
  }

  /** Visits every node; returns the most bytes the node's value can have, where known. */
  private walk(value: unknown): number | undefined {
    if (Array.isArray(value)) {
      for (const item of value) this.walk(item);
      return undefined;
    }
    if (!isNode(value)) return undefined;
    // A query level inlined without its wrapper (the branches of a UNION).
    if ('targetList' in value || 'valuesLists' in value || 'larg' in value) {
      this.query(value);
      return undefined;
    }
    const [kind, body] = Object.entries(value)[0] ?? ['', undefined];
    if (Object.keys(value).length !== 1 || !isNode(body)) {
      for (const inner of Object.values(value)) this.walk(inner);
      return undefined;
    }
    switch (kind) {
      case 'SelectStmt':
        this.query(body);
        return undefined;
      case 'A_Const':
        if (isNode(body.sval) && typeof body.sval.sval === 'string') {
          return Buffer.byteLength(body.sval.sval);
        }
        if (isNode(body.ival)) return String(Number(body.ival.ival ?? 0)).length;
        if (isNode(body.fval)) return String(body.fval.fval).length;
        return 8;
      case 'ColumnRef':
        return this.column(strings(body.fields).at(-1));
      case 'TypeCast':
        this.walk(body.typeName);
        return this.walk(body.arg);
      case 'A_Expr': {
        const left = this.walk(body.lexpr);
        const right = this.walk(body.rexpr);
        const name = strings(body.name).at(-1);
        if (name === '||' && (left !== undefined || right !== undefined)) {
          return this.checked('a concatenation', (left ?? 0) + (right ?? 0));
        }
        return undefined;
      }
      case 'FuncCall':
        return this.call(body);
      default:
        for (const inner of Object.values(body)) this.walk(inner);
        return undefined;
    }
  }

  /** A column of the FROM items in scope, by name (innermost level first). */
  private column(name: string | undefined): number | undefined {
    if (name === undefined || name === '*') return undefined;
    for (const level of [...this.levels].reverse()) {
      const found = level.columns.filter(([n]) => n === name);
      if (found.length > 0) return this.widest(found.map(([, size]) => size));
    }
    return undefined;
  }

  private call(fn: Node): number | undefined {
    const name = nameOf(fn);
    const args = (fn.args as unknown[] | undefined) ?? [];
    const sizes = args.map((arg) => this.walk(arg));
    this.walk(fn.agg_order);
    this.walk(fn.agg_filter);
    this.walk(fn.over);
    const shown = `${name}()`;
    if (name === 'repeat' && args.length === 2) {
      // What is repeated takes at least a byte, unless it is known.
      const n = this.count(shown, numberOf(args[1]));
      return n === undefined ? undefined : this.checked(shown, (sizes[0] ?? 1) * n);
    }
    if ((name === 'lpad' || name === 'rpad') && args.length >= 2) {
      const n = this.count(shown, numberOf(args[1]));
      // A character of the fill takes up to 4 bytes in UTF-8 (the default fill is a space).
      const fill = args.length >= 3 ? sizes[2] : 1;
      return n === undefined ? undefined : this.checked(shown, n * Math.min(4, fill ?? 4));
    }
    if (name === 'array_fill' && args.length >= 2) {
      const dims = isNode(args[1]) && isNode(args[1].A_ArrayExpr) ? args[1].A_ArrayExpr : undefined;
      const ns = ((dims?.elements as unknown[] | undefined) ?? []).map(numberOf);
      if (dims === undefined || ns.some((n) => n === undefined)) return undefined;
      const elements = this.count(
        shown,
        ns.reduce<number>((a, n) => a * Math.max(0, n!), 1),
      )!;
      return this.checked(shown, elements * Math.max(1, sizes[0] ?? 1));
    }
    if (name === 'concat' || name === 'concat_ws') {
      if (sizes.every((s) => s === undefined)) return undefined;
      const total = sizes.reduce<number>((a, s) => a + (s ?? 0), 0);
      return this.checked(shown, name === 'concat_ws' ? total * Math.max(1, args.length) : total);
    }
    if (CONCATENATING.has(name)) {
      // Each of the rows adds its values (at least a byte each, unless known).
      const rows = this.levels.at(-1)?.rows;
      if (rows === undefined) return undefined;
      const each = sizes.reduce<number>((a, s) => a + (s ?? 1), 0);
      return this.checked(`${shown} over ${rows} rows`, rows * each);
    }
    return undefined;
  }
}
