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
  const words = text
    .replace(/[+\-&|!(){}[\]^"~*?:\\/]/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '' && !/^(and|or|not)$/i.test(w));
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
const FUNCTIONS = new Set([
  'currentuser',
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

function field(name: string): string {
  if (SCOPE_FIELDS.has(name.toLowerCase())) {
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

function operand(o: Operand): string {
  if ('values' in o) return `(${o.values.map(operand).join(', ')})`;
  if ('keyword' in o) return 'EMPTY';
  if ('function' in o) {
    if (!FUNCTIONS.has(o.function.toLowerCase())) {
      throw new ToolError(`JQL function ${o.function}() is not allowed here.`, {
        code: 'jql_function',
      });
    }
    return `${o.function}(${o.arguments.map(quote).join(', ')})`;
  }
  return quote(o.value);
}

/** Writes a parse tree back as JQL, every value quoted; refuses what would leave the scope. */
export function writeClause(c: Clause): string {
  if ('clauses' in c && Array.isArray(c.clauses)) {
    const op = String(c.operator).toLowerCase();
    const parts = (c.clauses as Clause[]).map((x) => `(${writeClause(x)})`);
    if (op === 'not') return `NOT ${parts[0]}`;
    if (op !== 'and' && op !== 'or') throw new ToolError(`JQL operator ${op} is not allowed here.`);
    return parts.join(` ${op.toUpperCase()} `);
  }
  if ('field' in c && 'operand' in c) {
    const f = c.field as { name: string; property?: unknown[] };
    if (f.property !== undefined)
      throw new ToolError('JQL entity properties are not allowed here.', { code: 'jql_field' });
    const op = String(c.operator).toLowerCase();
    if (!OPERATORS.has(op))
      throw new ToolError(`JQL operator ${op} is not allowed here.`, { code: 'jql_operator' });
    return `${field(f.name)} ${op.toUpperCase()} ${operand(c.operand as Operand)}`;
  }
  // WAS and CHANGED clauses (history) are left out: keep the model's JQL to current values.
  throw new ToolError('JQL history clauses (WAS, CHANGED) are not allowed here.', {
    code: 'jql_clause',
  });
}

/** ORDER BY of the model's query, with fields checked like the where-clause. */
export function writeOrderBy(orderBy: ParsedQuery['orderBy']): string {
  if (orderBy === undefined || orderBy.fields.length === 0) return '';
  return ` ORDER BY ${orderBy.fields
    .map(
      (o) =>
        `${field(o.field.name)}${o.direction === undefined ? '' : ` ${o.direction.toUpperCase() === 'ASC' ? 'ASC' : 'DESC'}`}`,
    )
    .join(', ')}`;
}

/** The project scope: `project in ("OPS", "AND")`. */
export function scopeClause(projects: readonly string[]): string {
  return `project IN (${projects.map(quote).join(', ')})`;
}
