/**
 * A JQL subset the Jira fake really parses and evaluates, so that injection tests mean
 * something: `field op value` clauses (=, !=, >, <, >=, <=, ~, !~, in, not in, is, is not), AND,
 * OR, NOT, parentheses, EMPTY/NULL, currentUser(), ORDER BY. The parse tree has the shape of
 * Jira's own `/rest/api/3/jql/parse` answer (JqlQuery: where + orderBy).
 */

export type JqlOperand =
  | { value: string }
  | { values: JqlOperand[] }
  | { keyword: 'empty' }
  | { function: string; arguments: string[] };

export type JqlClause =
  | { operator: 'and' | 'or' | 'not'; clauses: JqlClause[] }
  | { field: { name: string }; operator: string; operand: JqlOperand };

export interface JqlQuery {
  where?: JqlClause;
  orderBy?: { fields: Array<{ field: { name: string }; direction?: 'asc' | 'desc' }> };
}

type Token = { kind: 'word' | 'string' | 'op' | 'punct'; text: string };

export class JqlError extends Error {}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"' || c === "'") {
      let out = '';
      i++;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\' && i + 1 < text.length) {
          out += text[i + 1];
          i += 2;
        } else out += text[i++];
      }
      if (i >= text.length)
        throw new JqlError(`The quoted string ${c}${out} has not been completed.`);
      i++;
      tokens.push({ kind: 'string', text: out });
    } else if (c === '(' || c === ')' || c === ',') {
      tokens.push({ kind: 'punct', text: c });
      i++;
    } else if (/[=!<>~]/.test(c)) {
      const two = text.slice(i, i + 2);
      const op = ['!=', '>=', '<=', '!~'].includes(two) ? two : c;
      if (op === '!')
        throw new JqlError(
          "Error in the JQL Query: the character '!' is a reserved JQL character.",
        );
      tokens.push({ kind: 'op', text: op });
      i += op.length;
    } else {
      const m = /^[^\s"'(),=!<>~]+/.exec(text.slice(i))!;
      tokens.push({ kind: 'word', text: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

/** Parses JQL; throws a JqlError with a message in Jira's words. */
export function parseJql(text: string): JqlQuery {
  const tokens = tokenize(text);
  let at = 0;
  const peek = (): Token | undefined => tokens[at];
  const word = (w: string, t = peek()) => t?.kind === 'word' && t.text.toLowerCase() === w;
  const expect = (what: string, ok: boolean): void => {
    if (!ok) {
      const t = peek();
      throw new JqlError(
        t === undefined
          ? `Error in the JQL Query: Expecting ${what} but reached the end of the query.`
          : `Error in the JQL Query: Expecting ${what} but got '${t.text}'.`,
      );
    }
  };
  const value = (): JqlOperand => {
    const t = peek();
    expect('a value', t !== undefined && (t.kind === 'word' || t.kind === 'string'));
    at++;
    if (t!.kind === 'word' && (word('empty', t) || word('null', t))) return { keyword: 'empty' };
    if (t!.kind === 'word' && peek()?.text === '(') {
      at++;
      const args: string[] = [];
      while (peek()?.text !== ')') {
        const a = peek();
        expect('a function argument', a !== undefined && a.kind !== 'punct' && a.kind !== 'op');
        args.push(a!.text);
        at++;
        if (peek()?.text === ',') at++;
      }
      at++;
      return { function: t!.text, arguments: args };
    }
    return { value: t!.text };
  };
  const operand = (): JqlOperand => {
    if (peek()?.text !== '(') return value();
    at++;
    const values: JqlOperand[] = [];
    for (;;) {
      values.push(value());
      if (peek()?.text === ',') {
        at++;
        continue;
      }
      expect("')'", peek()?.text === ')');
      at++;
      return { values };
    }
  };
  const clause = (): JqlClause => {
    if (word('not')) {
      at++;
      return { operator: 'not', clauses: [clause()] };
    }
    if (peek()?.text === '(') {
      at++;
      const inner = or();
      expect("')'", peek()?.text === ')');
      at++;
      return inner;
    }
    const field = peek();
    expect(
      'a field name',
      field !== undefined && (field.kind === 'word' || field.kind === 'string'),
    );
    at++;
    let op: string;
    const t = peek();
    if (t?.kind === 'op') {
      op = t.text;
      at++;
    } else if (word('in')) {
      op = 'in';
      at++;
    } else if (word('not') && word('in', tokens[at + 1])) {
      op = 'not in';
      at += 2;
    } else if (word('is')) {
      at++;
      if (word('not')) {
        at++;
        op = 'is not';
      } else op = 'is';
    } else {
      expect('an operator', false);
      op = '';
    }
    return { field: { name: field!.text }, operator: op, operand: operand() };
  };
  const and = (): JqlClause => {
    const clauses = [clause()];
    while (word('and')) {
      at++;
      clauses.push(clause());
    }
    return clauses.length === 1 ? clauses[0]! : { operator: 'and', clauses };
  };
  function or(): JqlClause {
    const clauses = [and()];
    while (word('or')) {
      at++;
      clauses.push(and());
    }
    return clauses.length === 1 ? clauses[0]! : { operator: 'or', clauses };
  }
  const query: JqlQuery = {};
  if (peek() !== undefined && !word('order')) query.where = or();
  if (word('order')) {
    at++;
    expect('BY', word('by'));
    at++;
    const fields: NonNullable<JqlQuery['orderBy']>['fields'] = [];
    for (;;) {
      const f = peek();
      expect('a field to order by', f !== undefined && f.kind !== 'punct' && f.kind !== 'op');
      at++;
      const dir = word('asc') ? 'asc' : word('desc') ? 'desc' : undefined;
      if (dir !== undefined) at++;
      fields.push({ field: { name: f!.text }, ...(dir === undefined ? {} : { direction: dir }) });
      if (peek()?.text !== ',') break;
      at++;
    }
    query.orderBy = { fields };
  }
  if (peek() !== undefined) {
    throw new JqlError(
      `Error in the JQL Query: Expecting either 'OR' or 'AND' but got '${peek()!.text}'.`,
    );
  }
  return query;
}

/** The date fields the fake compares as instants. */
const DATE_FIELDS = new Set(['created', 'createddate', 'updated', 'updateddate']);

/**
 * A JQL date value as an instant: a period relative to now (`-10m`, `-1h`, `-4w 2d`) or an
 * absolute date (`yyyy-MM-dd`, `yyyy/MM/dd`, optionally `HH:mm`), read in the user's time zone —
 * UTC for every user of the fake. Jira's rules and its error text: support.atlassian.com,
 * "Jira Cloud: Advanced search — fields reference", Created ("Search for issues that were created
 * on, before, or after a particular date (or date range)").
 */
export function jqlInstant(value: string, field: string, now = Date.now()): number {
  const period = /^([+-]?)((?:\d+[wdhm]\s*)+)$/.exec(value.trim());
  if (period !== null) {
    const unit = { w: 604_800_000, d: 86_400_000, h: 3_600_000, m: 60_000 } as const;
    const ms = [...period[2]!.matchAll(/(\d+)([wdhm])/g)].reduce(
      (sum, [, n, u]) => sum + Number(n) * unit[u as keyof typeof unit],
      0,
    );
    return now + (period[1] === '-' ? -ms : ms);
  }
  const absolute = /^(\d{4})[-/](\d{2})[-/](\d{2})(?: (\d{2}):(\d{2}))?$/.exec(value.trim());
  if (absolute !== null) {
    const [, y, mo, d, h = '00', mi = '00'] = absolute;
    return Date.parse(`${y}-${mo}-${d}T${h}:${mi}:00Z`);
  }
  throw new JqlError(
    `Date value '${value}' for field '${field}' is invalid. Valid formats include: 'yyyy/MM/dd HH:mm', 'yyyy-MM-dd HH:mm', 'yyyy/MM/dd', 'yyyy-MM-dd', or a period format e.g. '-5d', '4w 2d'.`,
  );
}

/** What a clause compares: the values of a field (several for labels), lower-cased. */
export type FieldValues = (field: string) => Array<string | null> | undefined;

/** Evaluates a parsed where-clause against an issue. Unknown fields are a JqlError. */
/** The values a JQL function stands for (lower-cased), or undefined for a function it lacks. */
export type JqlFunctions = (name: string, args: readonly string[]) => string[] | undefined;

export function matches(
  clause: JqlClause,
  values: FieldValues,
  me: string,
  functions: JqlFunctions = () => undefined,
): boolean {
  if ('clauses' in clause) {
    if (clause.operator === 'and')
      return clause.clauses.every((c) => matches(c, values, me, functions));
    if (clause.operator === 'or')
      return clause.clauses.some((c) => matches(c, values, me, functions));
    return !matches(clause.clauses[0]!, values, me, functions);
  }
  const have = values(clause.field.name.toLowerCase());
  if (have === undefined) {
    throw new JqlError(
      `Field '${clause.field.name}' does not exist or you do not have permission to view it.`,
    );
  }
  const resolve = (o: JqlOperand): Array<string | null> => {
    if ('keyword' in o) return [null];
    if ('function' in o) {
      if (o.function.toLowerCase() === 'currentuser') return [me.toLowerCase()];
      const given = functions(o.function.toLowerCase(), o.arguments);
      if (given !== undefined) return given.length === 0 ? ['\u0000none'] : given;
      throw new JqlError(`Unable to find JQL function '${o.function}(${o.arguments.join(', ')})'.`);
    }
    if ('values' in o) return o.values.flatMap(resolve);
    return [o.value.toLowerCase()];
  };
  const wanted = resolve(clause.operand);
  const present = have.length === 0 ? [null] : have;
  const eq = (a: string | null, b: string | null) => a === b;
  switch (clause.operator) {
    case '=':
    case 'in':
    case 'is':
      return present.some((h) => wanted.some((w) => eq(h, w)));
    case '!=':
    case 'not in':
    case 'is not':
      return !present.some((h) => wanted.some((w) => eq(h, w)));
    case '~':
    case '!~': {
      const terms = wanted.flatMap((w) => (w ?? '').split(/\s+/)).filter((t) => t !== '');
      const hit = present.some(
        (h) => h !== null && terms.every((t) => h.includes(t.replace(/[*?]/g, ''))),
      );
      return clause.operator === '~' ? hit : !hit;
    }
    case '>':
    case '<':
    case '>=':
    case '<=': {
      const w = wanted[0] ?? '';
      const dated = DATE_FIELDS.has(clause.field.name.toLowerCase());
      const at = dated ? jqlInstant(w, clause.field.name) : 0;
      return present.some((h) => {
        if (h === null) return false;
        const [x, y] = dated ? [Date.parse(h), at] : [h, w];
        const cmp = x < y ? -1 : x > y ? 1 : 0;
        return clause.operator === '>'
          ? cmp > 0
          : clause.operator === '<'
            ? cmp < 0
            : clause.operator === '>='
              ? cmp >= 0
              : cmp <= 0;
      });
    }
    default:
      throw new JqlError(`The operator '${clause.operator}' is not supported.`);
  }
}
