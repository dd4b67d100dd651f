/**
 * Curated queries (POSTGRES_QUERIES_FILE, ADR 0021): SQL a DBA approves once, each entry a tool
 * the model can only fill in — typed, bounded parameters in the input schema, and parameters
 * bound to the caller (the principal, a claim of its token or API key) that the model never
 * sees and cannot set. The statements go through the same layers as free SQL: parsed and held
 * to the static rules when the file is read at start, resolved against the catalog and prepared
 * by PostgreSQL once it answers, and checked again in every call like any query.
 */
import { createHash } from 'node:crypto';
import { ConfigError, CredentialError, ToolError, UpstreamError } from '@gatehouse/core';
import type { BoundParameter } from '@gatehouse/core';
import * as z from 'zod';
import { readYamlFile } from './yaml-file.js';
import type { PostgresConfig } from './config.js';
import type { SqlService } from './sql/service.js';
import type { SqlAnalysis } from './sql/guard.js';
import { serverCall } from './sql/database.js';

/** A tool's name: lower case, as the listing and the audit record show it. */
const TOOL_NAME = /^[a-z][a-z0-9_]{2,63}$/;
/** A parameter's name: what the model sends (and the input schema lists). */
const PARAM_NAME = /^[a-z][a-z0-9_]{0,63}$/;
/**
 * The most bytes one curated tool's listing may take (its name, title, description and input
 * schema as JSON): every listed tool costs context in every conversation. postgres_query's own
 * listing is under 1 KiB.
 */
export const LISTING_BUDGET = 6 * 1024;

/** Where a bound parameter's value comes from: the principal's id, or one of its claims. */
const BOUND = /^(?:principal|claim:[A-Za-z_][\w.:-]{0,63})$/;

const common = {
  name: z.string().regex(PARAM_NAME, 'lower-case letters, digits and _ (a letter first)'),
  description: z.string().min(1).max(500).optional(),
  optional: z
    .boolean()
    .optional()
    .describe('The model may leave it out; the statement then gets NULL (or the default).'),
  bound: z
    .string()
    .regex(BOUND, 'expected principal or claim:<name>')
    .optional()
    .describe(
      "Taken from the caller, never from the model: `principal` (the caller's id) or `claim:<name>` (a claim of its token, or of its API key's `claims`). Not in the input schema; a call that sends it is refused.",
    ),
};

const bounds = {
  minimum: z.number().optional(),
  maximum: z.number().optional(),
};

const scalars = {
  string: z.strictObject({
    ...common,
    type: z.literal('string'),
    pattern: z
      .string()
      .refine(
        (p) => {
          try {
            new RegExp(p, 'u');
            return true;
          } catch {
            return false;
          }
        },
        { message: 'not a valid regular expression' },
      )
      .optional()
      .describe('A regular expression the whole value must match (anchored for you).'),
    min_length: z.number().int().min(0).optional(),
    max_length: z.number().int().min(1).max(100_000).default(1_000),
    default: z.string().optional(),
  }),
  integer: z.strictObject({
    ...common,
    type: z.literal('integer'),
    ...bounds,
    default: z.number().int().optional(),
  }),
  number: z.strictObject({
    ...common,
    type: z.literal('number'),
    ...bounds,
    default: z.number().optional(),
  }),
  boolean: z.strictObject({
    ...common,
    type: z.literal('boolean'),
    default: z.boolean().optional(),
  }),
  enum: z.strictObject({
    ...common,
    type: z.literal('enum'),
    values: z.array(z.string().min(1).max(200)).min(1).max(200),
    default: z.string().optional(),
  }),
  date: z.strictObject({
    ...common,
    type: z.literal('date'),
    default: z.iso.date().optional(),
  }),
  timestamp: z.strictObject({
    ...common,
    type: z.literal('timestamp'),
    default: z.iso.datetime({ offset: true }).optional(),
  }),
};

/** The type of a list's items: a scalar parameter without its name and roles. */
const ItemSchema = z.discriminatedUnion('type', [
  scalars.string.omit({
    name: true,
    description: true,
    optional: true,
    bound: true,
    default: true,
  }),
  scalars.integer.omit({
    name: true,
    description: true,
    optional: true,
    bound: true,
    default: true,
  }),
  scalars.number.omit({
    name: true,
    description: true,
    optional: true,
    bound: true,
    default: true,
  }),
  scalars.boolean.omit({
    name: true,
    description: true,
    optional: true,
    bound: true,
    default: true,
  }),
  scalars.enum.omit({ name: true, description: true, optional: true, bound: true, default: true }),
  scalars.date.omit({ name: true, description: true, optional: true, bound: true, default: true }),
  scalars.timestamp.omit({
    name: true,
    description: true,
    optional: true,
    bound: true,
    default: true,
  }),
]);

const ParameterSchema = z.discriminatedUnion('type', [
  scalars.string,
  scalars.integer,
  scalars.number,
  scalars.boolean,
  scalars.enum,
  scalars.date,
  scalars.timestamp,
  z.strictObject({
    ...common,
    type: z.literal('list'),
    items: ItemSchema,
    min_items: z.number().int().min(0).optional(),
    max_items: z.number().int().min(1).max(1_000).default(100),
  }),
]);
export type CuratedParameter = z.output<typeof ParameterSchema>;

/** A parameter's default, if it has one (a list has none). */
const defaultOf = (p: CuratedParameter): unknown => ('default' in p ? p.default : undefined);

const EntrySchema = z
  .strictObject({
    name: z
      .string()
      .regex(TOOL_NAME, '3-64 lower-case letters, digits and _ (a letter first)')
      .describe('The tool name the model calls (and the audit record names).'),
    title: z.string().min(1).max(100),
    description: z
      .string()
      .min(1)
      .max(2_000)
      .describe('What the model reads to choose the tool: what it answers, when to use it.'),
    parameters: z
      .array(ParameterSchema)
      .max(30)
      .default([])
      .describe('$1, $2, … of the SQL, in order.'),
    sql: z
      .string()
      .min(1)
      .max(20_000)
      .describe('One SELECT with positional parameters $1, $2, …; checked like free SQL.'),
    max_rows: z.number().int().min(1).optional().describe('At most POSTGRES_MAX_ROWS.'),
    max_bytes: z.number().int().min(1_024).optional().describe('At most POSTGRES_MAX_BYTES.'),
    timeout_ms: z
      .number()
      .int()
      .min(100)
      .optional()
      .describe(
        'At most POSTGRES_STATEMENT_TIMEOUT_MS: the call deadline, which lowers the statement timeout.',
      ),
    scope: z
      .string()
      .regex(/^[\w.:-]{1,128}$/)
      .optional()
      .describe('The scope a caller needs to see and call it (default postgres:read).'),
  })
  .superRefine((entry, ctx) => {
    const names = new Set<string>();
    entry.parameters.forEach((p, i) => {
      const at = (key: string) => ['parameters', i, key];
      if (names.has(p.name))
        ctx.addIssue({ code: 'custom', path: at('name'), message: `${p.name} is named twice` });
      names.add(p.name);
      if (p.bound !== undefined) {
        if (p.optional === true || defaultOf(p) !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: at('bound'),
            message:
              'a bound parameter is always the caller’s: it cannot be optional or have a default',
          });
        if (p.type === 'list')
          ctx.addIssue({ code: 'custom', path: at('bound'), message: 'a list cannot be bound' });
      } else if (p.description === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: at('description'),
          message: 'a parameter the model fills in needs a description',
        });
      }
      if (
        'minimum' in p &&
        p.minimum !== undefined &&
        p.maximum !== undefined &&
        p.minimum > p.maximum
      )
        ctx.addIssue({ code: 'custom', path: at('minimum'), message: 'greater than maximum' });
    });
  });
export type CuratedQuery = z.output<typeof EntrySchema>;

/** The file: `queries:`, a list of entries. */
export const CuratedFileSchema = z.strictObject({
  queries: z.array(EntrySchema).min(1).max(200),
});

/** The curated queries as read at start: the file, its SHA-256, the entries. */
export interface CuratedSet {
  readonly file: string;
  readonly sha256: string;
  readonly queries: readonly CuratedQuery[];
}

/** The path of an issue as the file writes it: `queries[1] (customer_orders).parameters[0].type`. */
function where(path: readonly PropertyKey[], doc: unknown): string {
  let text = '';
  path.forEach((key, i) => {
    if (typeof key === 'number') {
      text += `[${key}]`;
      if (i === 1 && path[0] === 'queries') {
        const name = (doc as { queries?: Array<{ name?: unknown }> }).queries?.[key]?.name;
        if (typeof name === 'string') text += ` (${name.slice(0, 64)})`;
      }
    } else text += `${text === '' ? '' : '.'}${String(key)}`;
  });
  return text || '(the file)';
}

/**
 * Reads and checks POSTGRES_QUERIES_FILE: YAML, the schema above, names unique and clear of the
 * server's own tools, caps within the server's. Throws a ConfigError naming every problem.
 */
export function loadCuratedQueries(
  file: string,
  config: PostgresConfig,
  reserved: readonly string[],
): CuratedSet {
  const problem = (text: string) => `POSTGRES_QUERIES_FILE: ${file}: ${text}`;
  const { bytes, doc } = readYamlFile(file, problem);
  const parsed = CuratedFileSchema.safeParse(doc);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => problem(`${where(i.path, doc)}: ${i.message}`)),
    );
  }
  const problems: string[] = [];
  const seen = new Set<string>();
  parsed.data.queries.forEach((q, i) => {
    const at = `queries[${i}] (${q.name})`;
    if (seen.has(q.name)) problems.push(problem(`${at}: the name is used twice`));
    if (reserved.includes(q.name))
      problems.push(problem(`${at}: the name is one of the server's own tools`));
    seen.add(q.name);
    const over = (key: string, value: number | undefined, variable: string, limit: number) => {
      if (value !== undefined && value > limit)
        problems.push(
          problem(
            `${at}.${key}: ${value} is above ${variable} (${limit}); a query's caps can only be tighter`,
          ),
        );
    };
    const listing = Buffer.byteLength(
      JSON.stringify({
        name: q.name,
        title: q.title,
        description: curatedDescription(q, config),
        inputSchema: z.toJSONSchema(inputSchema(q)),
      }),
    );
    if (listing > LISTING_BUDGET)
      problems.push(
        problem(
          `${at}: its listing (name, title, description, parameters) is ${listing} bytes, over the ${LISTING_BUDGET} a tool may take of a model's context; shorten the descriptions`,
        ),
      );
    over('max_rows', q.max_rows, 'POSTGRES_MAX_ROWS', config.POSTGRES_MAX_ROWS);
    over('max_bytes', q.max_bytes, 'POSTGRES_MAX_BYTES', config.POSTGRES_MAX_BYTES);
    over(
      'timeout_ms',
      q.timeout_ms,
      'POSTGRES_STATEMENT_TIMEOUT_MS',
      config.POSTGRES_STATEMENT_TIMEOUT_MS,
    );
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    file,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    queries: parsed.data.queries,
  };
}

/**
 * What the model reads of a curated tool: the entry's description and the row cap it answers
 * under — at most 2 047 characters (a 2 000-character description, a six-digit cap), within what
 * clients show whole. That rows are data is said once, in the server's instructions.
 */
export function curatedDescription(query: CuratedQuery, config: PostgresConfig): string {
  return `${query.description} (Up to ${query.max_rows ?? config.POSTGRES_MAX_ROWS} rows; truncated: true when cut.)`;
}

/** The zod type of one parameter's value as the model sends it. */
function valueSchema(p: CuratedParameter | z.output<typeof ItemSchema>): z.ZodType {
  switch (p.type) {
    case 'string': {
      let s = z.string().max(p.max_length);
      if (p.min_length !== undefined) s = s.min(p.min_length);
      if (p.pattern !== undefined) s = s.regex(new RegExp(`^(?:${p.pattern})$`, 'u'));
      return s;
    }
    case 'integer': {
      let n = z.number().int();
      if (p.minimum !== undefined) n = n.min(p.minimum);
      if (p.maximum !== undefined) n = n.max(p.maximum);
      return n;
    }
    case 'number': {
      let n = z.number();
      if (p.minimum !== undefined) n = n.min(p.minimum);
      if (p.maximum !== undefined) n = n.max(p.maximum);
      return n;
    }
    case 'boolean':
      return z.boolean();
    case 'enum':
      return z.enum(p.values as [string, ...string[]]);
    case 'date':
      return z.iso.date();
    case 'timestamp':
      return z.iso.datetime({ offset: true });
    case 'list': {
      let list = z.array(valueSchema(p.items)).max(p.max_items);
      if (p.min_items !== undefined) list = list.min(p.min_items);
      return list;
    }
  }
}

/** The input schema of a curated tool: the parameters the model fills in, and nothing else. */
export function inputSchema(query: CuratedQuery): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const p of query.parameters) {
    if (p.bound !== undefined) continue;
    let s = valueSchema(p).describe(p.description!);
    if (defaultOf(p) !== undefined) s = s.default(defaultOf(p) as never);
    else if (p.optional === true) s = s.optional();
    shape[p.name] = s;
  }
  return z.strictObject(shape);
}

/** The caller-bound parameters of a query, as the core resolves them (never from arguments). */
export function boundParameters(query: CuratedQuery): BoundParameter[] {
  return query.parameters.flatMap((p) => {
    if (p.bound === undefined) return [];
    // Built once: the check runs in every call.
    const schema = valueSchema(p);
    return [
      { name: p.name, from: p.bound, check: (value: string) => schema.parse(typed(p, value)) },
    ];
  });
}

/**
 * A caller's value (a claim is text) in the parameter's type, for its schema to hold to the
 * parameter's bounds: a claim that is no integer, or a string over its length, is then refused.
 */
function typed(p: CuratedParameter, value: string): unknown {
  // Only the plain decimal spelling counts as a number: Number() would also read "0x11", " 17",
  // "1e1" or "" (as 0) — a claim that is not certainly the number stays text, and is refused.
  if (p.type === 'integer') return /^-?(?:0|[1-9]\d*)$/.test(value) ? Number(value) : value;
  if (p.type === 'number')
    return /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(value) ? Number(value) : value;
  if (p.type === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  return value;
}

/** The statement's values in $n order: the model's arguments and the caller's bound values. */
export function statementValues(
  query: CuratedQuery,
  args: Readonly<Record<string, unknown>>,
  bound: Readonly<Record<string, unknown>>,
): unknown[] {
  return query.parameters.map((p) => {
    const value = p.bound === undefined ? args[p.name] : bound[p.name];
    return value === undefined ? null : value;
  });
}

/** A curated statement that passed the parse and the static rules. */
export interface CheckedQuery {
  readonly query: CuratedQuery;
  readonly at: string;
  readonly analysis: SqlAnalysis;
}

/**
 * The start-up check's first half, which needs no database: every statement parsed and held to
 * the static rules of free SQL, one SELECT (not an EXPLAIN), its $n exactly the parameters the
 * entry declares. Throws a ConfigError naming each entry and rule that failed.
 */
export async function checkCuratedStatic(
  sql: SqlService,
  set: CuratedSet,
): Promise<CheckedQuery[]> {
  const problems: string[] = [];
  const checked: CheckedQuery[] = [];
  for (const [i, query] of set.queries.entries()) {
    const at = `POSTGRES_QUERIES_FILE: ${set.file}: queries[${i}] (${query.name}).sql`;
    try {
      const analysis = await sql.check(query.sql);
      if (analysis.kind !== 'select') {
        problems.push(`${at}: an EXPLAIN; write the SELECT itself`);
      } else if (analysis.parameterCount !== query.parameters.length) {
        problems.push(
          `${at}: its highest placeholder is $${analysis.parameterCount}, and the entry declares ${query.parameters.length} parameter(s): one for each of $1, $2, … in order`,
        );
      } else {
        checked.push({ query, at, analysis });
      }
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
      problems.push(`${at}: ${error.message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return checked;
}

/**
 * The second half, once PostgreSQL answers: what each statement resolves to in the catalog held
 * to the rules (schemas, masking, functions) as in any call, and PostgreSQL's own check of it
 * (PREPARE, then DEALLOCATE, in a read-only transaction): a column that is not there, a type that
 * does not fit a placeholder. A failure refuses the start, naming the entries (CredentialError of
 * POSTGRES_QUERIES_FILE); an unreachable database starts the server unready and is checked again.
 */
export async function checkCuratedCatalog(
  sql: SqlService,
  checked: readonly CheckedQuery[],
): Promise<void> {
  const problems: string[] = [];
  for (const { at, analysis } of checked) {
    try {
      await sql.db.transaction(serverCall(10_000), async (client, role) => {
        await sql.verdict(analysis, client, role);
        await client.query(`PREPARE gatehouse_curated AS ${analysis.statement}`);
        await client.query('DEALLOCATE gatehouse_curated');
      });
    } catch (error) {
      if (error instanceof UpstreamError || !(error instanceof ToolError)) throw error;
      problems.push(`${at.replace(/^POSTGRES_QUERIES_FILE: /, '')}: ${error.message}`);
    }
  }
  if (problems.length > 0) throw new CredentialError('POSTGRES_QUERIES_FILE', problems.join('; '));
}
