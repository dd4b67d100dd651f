import { ToolError } from '@gatehouse/core';

/**
 * JQL the server writes. Every value is a quoted string literal with `\` and `"` escaped, so a
 * value can never close its quotes, and a project key that is a reserved word (AND, IS) works.
 * The model's own JQL is never pasted: it is parsed by Jira (strict validation) and the tree is
 * written back out here, inside the project scope: `project in (…) AND (<where>) ORDER BY …`.
 */

/** A JQL string literal. */
export function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Free text for `text ~`: the words only (Lucene specials stripped), as one quoted phrase. */
export function textTerms(text: string): string {
  // Inside the phrase, AND, OR and NOT in capitals would be Lucene operators; in lower case they
  // are words like any other, so a search for "rock and roll" keeps its "and".
  const words = text
    .replace(/[+\-&|!(){}[\]^"~*?:\\/]/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '')
    .map((w) => (/^(and|or|not)$/i.test(w) ? w.toLowerCase() : w));
  if (words.length === 0)
    throw new ToolError('text has no words to search for.', { code: 'invalid_text' });
  return quote(words.join(' '));
}

/** Jira's parse tree (POST /rest/api/3/jql/parse), as much of it as the server writes back. */
type Operand =
  | { value: string }
  | { values: Operand[] }
  | { keyword: string }
  | { function: string; arguments: string[] };
export type Clause =
  | { operator: string; clauses: Clause[] }
  | { field: { name: string; property?: unknown[] }; operator: string; operand: Operand }
  | Record<string, unknown>;
export interface ParsedQuery {
  where?: Clause;
  orderBy?: { fields: Array<{ field: { name: string }; direction?: string }> };
}

/** Fields the model's JQL may not name: they would reach past the project scope. */
const SCOPE_FIELDS = new Set(['project', 'category', 'projecttype']);
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9 _.-]*$|^cf\[\d+\]$/;
const OPERATORS = new Set([
  '=',
  '!=',
  '>',
  '<',
  '>=',
  '<=',
  'in',
  'not in',
  '~',
  '!~',
  'is',
  'is not',
]);
/**
 * Functions whose answer cannot reach past the project scope (the whole where-clause is ANDed
 * with it). Those that take a project take only one of the server's (PROJECT_FUNCTIONS).
 */
const FUNCTIONS = new Set([
  'currentuser',
  'currentlogin',
  'lastlogin',
  'unreleasedversions',
  'releasedversions',
  'earliestunreleasedversion',
  'latestreleasedversion',
  'futuresprints',
  'standardissuetypes',
  'subtaskissuetypes',
  'now',
  'startofday',
  'endofday',
  'startofweek',
  'endofweek',
  'startofmonth',
  'endofmonth',
  'startofyear',
  'endofyear',
  'membersof',
  'opensprints',
  'closedsprints',
]);

const PROJECT_FUNCTIONS = new Set([
  'unreleasedversions',
  'releasedversions',
  'earliestunreleasedversion',
  'latestreleasedversion',
]);

/** A parse tree Jira answered in a shape this code does not know: refused, never guessed at. */
function unexpected(what: string): ToolError {
  return new ToolError(
    `Jira parsed the JQL into a shape this server does not know (${what}); it was not run. Use the structured filters.`,
    { code: 'jql_shape' },
  );
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function field(name: unknown, forOrder = false): string {
  if (typeof name !== 'string') throw unexpected('a field without a name');
  // Sorting by project reaches nothing: the results are the scope's either way.
  if (SCOPE_FIELDS.has(name.toLowerCase()) && !(forOrder && name.toLowerCase() === 'project')) {
    throw new ToolError(
      `JQL may not name ${name}: the server confines every search to its projects; use the project filter.`,
      { code: 'jql_scope' },
    );
  }
  if (!FIELD_NAME.test(name))
    throw new ToolError(`JQL field ${JSON.stringify(name)} is not allowed here.`, {
      code: 'jql_field',
    });
  return /^cf\[\d+\]$/.test(name) || /^[A-Za-z][A-Za-z0-9_]*$/.test(name) ? name : quote(name);
}

function operand(o: unknown, projects: readonly string[]): string {
  if (!isObject(o)) throw unexpected('an operand that is not an object');
  if ('values' in o) {
    if (!Array.isArray(o.values)) throw unexpected('a list that is not a list');
    return `(${o.values.map((v) => operand(v, projects)).join(', ')})`;
  }
  if ('keyword' in o) return 'EMPTY';
  if ('function' in o) {
    const name = o.function;
    const args = o.arguments ?? [];
    if (
      typeof name !== 'string' ||
      !Array.isArray(args) ||
      !args.every((a) => typeof a === 'string')
    )
      throw unexpected('a function call');
    if (!FUNCTIONS.has(name.toLowerCase())) {
      throw new ToolError(`JQL function ${name}() is not allowed here.`, {
        code: 'jql_function',
      });
    }
    if (PROJECT_FUNCTIONS.has(name.toLowerCase())) {
      const outside = args.find(
        (a) => !projects.some((p) => p.toLowerCase() === a.trim().toLowerCase()),
      );
      if (outside !== undefined)
        throw new ToolError(
          `JQL ${name}() may name only this server's projects (${projects.join(', ')}).`,
          { code: 'jql_scope' },
        );
    }
    return `${name}(${args.map(quote).join(', ')})`;
  }
  if (typeof o.value !== 'string') throw unexpected('a value that is not text');
  return quote(o.value);
}

/**
 * Writes a parse tree back as JQL, every value quoted; refuses what would leave the scope (the
 * `projects` a function may name) and any shape it does not know.
 */
export function writeClause(c: Clause, projects: readonly string[]): string {
  if (!isObject(c)) throw unexpected('a clause that is not an object');
  if ('clauses' in c) {
    if (!Array.isArray(c.clauses) || c.clauses.length === 0) throw unexpected('an empty compound');
    const op = String(c.operator).toLowerCase();
    const parts = (c.clauses as Clause[]).map((x) => `(${writeClause(x, projects)})`);
    if (op === 'not') return `NOT ${parts[0]}`;
    if (op !== 'and' && op !== 'or') throw new ToolError(`JQL operator ${op} is not allowed here.`);
    return parts.join(` ${op.toUpperCase()} `);
  }
  if ('field' in c && 'operand' in c) {
    if (!isObject(c.field)) throw unexpected('a field that is not an object');
    const f = c.field as { name: unknown; property?: unknown[] };
    if (f.property !== undefined)
      throw new ToolError('JQL entity properties are not allowed here.', { code: 'jql_field' });
    const op = String(c.operator).toLowerCase();
    if (!OPERATORS.has(op))
      throw new ToolError(`JQL operator ${op} is not allowed here.`, { code: 'jql_operator' });
    return `${field(f.name)} ${op.toUpperCase()} ${operand(c.operand, projects)}`;
  }
  // WAS and CHANGED clauses (history) are left out: keep the model's JQL to current values.
  throw new ToolError('JQL history clauses (WAS, CHANGED) are not allowed here.', {
    code: 'jql_clause',
  });
}

/** ORDER BY of the model's query, with fields checked like the where-clause. */
export function writeOrderBy(orderBy: ParsedQuery['orderBy']): string {
  if (orderBy === undefined) return '';
  if (!isObject(orderBy) || !Array.isArray(orderBy.fields)) throw unexpected('an ORDER BY');
  if (orderBy.fields.length === 0) return '';
  return ` ORDER BY ${orderBy.fields
    .map((o: unknown) => {
      if (!isObject(o) || !isObject(o.field)) throw unexpected('an ORDER BY field');
      const direction = typeof o.direction === 'string' ? o.direction : undefined;
      return `${field(o.field.name, true)}${direction === undefined ? '' : ` ${direction.toUpperCase() === 'ASC' ? 'ASC' : 'DESC'}`}`;
    })
    .join(', ')}`;
}

/** The project scope: `project in ("OPS", "AND")`. */
export function scopeClause(projects: readonly string[]): string {
  return `project IN (${projects.map(quote).join(', ')})`;
}
