import { READ_ONLY_ANNOTATIONS, defineTool } from '@gatehouse/core';
import type { ToolContext } from '@gatehouse/core';
import * as z from 'zod';
import type { PostgresDeps } from '../deps.js';
import type { QueryOutput } from '../sql/execute.js';

export const QueryParamSchema = z.union([
  z.string().max(100_000),
  z.number(),
  z.boolean(),
  z.null(),
]);

export const QueryOutputSchema = z.object({
  columns: z.array(
    z.object({
      name: z.string(),
      type: z.string().describe('PostgreSQL type name'),
      masked: z.boolean().optional().describe('Values of this column are masked by policy'),
    }),
  ),
  rows: z.array(z.array(z.unknown())).describe('Each row as an array, in column order'),
  row_count: z.number().int().describe('Rows returned (after the caps)'),
  truncated: z.boolean().describe('True when more rows exist than were returned'),
  truncated_by: z.enum(['max_rows', 'max_bytes']).optional(),
  max_rows: z.number().int().describe('The row cap applied to this call'),
  max_bytes: z.number().int().describe('The byte cap (JSON of the rows) applied to this call'),
  values_cut: z.number().int().describe('Long values cut to fit (marked in place)'),
  duration_ms: z.number(),
});

const CELL_SPECIAL = /[\\\n\r|]/;
const CELL_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '|': '\\|' };

/** One value in a table row: backslash, newline, return and the column bar escaped. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // Most values need no escape: one test instead of four replacements each.
  return CELL_SPECIAL.test(text) ? text.replace(/[\\\n\r|]/g, (c) => CELL_ESCAPES[c]!) : text;
}

/**
 * A compact table for the model: header and rows, inside a code fence longer than any run of
 * backticks in the values — row values are third-party text, and in a code block a client that
 * renders Markdown shows an image or a link in them as text instead of fetching it.
 */
export function rowsText(output: QueryOutput): string {
  const header = output.columns
    .map((c) => `${c.name} (${c.type}${c.masked === true ? ', masked' : ''})`)
    .join(' | ');
  const body = output.rows.map((r) => r.map(cell).join(' | ')).join('\n');
  const table = body === '' ? header : `${header}\n${body}`;
  let longest = 0;
  for (const run of table.matchAll(/`+/g)) longest = Math.max(longest, run[0].length);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}\n${table}\n${fence}`;
}

function summary(output: QueryOutput & { durationMs: number }, maxRows: number, maxBytes: number) {
  const count = `${output.rowCount} row${output.rowCount === 1 ? '' : 's'}`;
  const cut =
    output.truncatedBy === 'max_rows'
      ? ` — TRUNCATED at the ${maxRows}-row cap: more rows exist. Aggregate, filter or paginate in SQL (ORDER BY … LIMIT/OFFSET) instead of raising the limit.`
      : output.truncatedBy === 'max_bytes'
        ? ` — TRUNCATED at the ${maxBytes}-byte cap: more rows exist. Select fewer or narrower columns, or aggregate in SQL.`
        : '';
  const values = output.valuesCut > 0 ? ` ${output.valuesCut} long value(s) were cut.` : '';
  return `${count} in ${output.durationMs} ms${cut}${values}`;
}

/**
 * The answer to a query, as postgres_query and every curated query give it: columns and rows,
 * the caps applied and whether they cut, and the rows framed as untrusted data for the model.
 */
export function queryAnswer(
  output: QueryOutput & { durationMs: number },
  caps: { maxRows: number; maxBytes: number },
  ctx: ToolContext,
  deps: PostgresDeps,
) {
  const structured = {
    columns: output.columns,
    rows: output.rows,
    row_count: output.rowCount,
    truncated: output.truncated,
    ...(output.truncatedBy === undefined ? {} : { truncated_by: output.truncatedBy }),
    max_rows: caps.maxRows,
    max_bytes: caps.maxBytes,
    values_cut: output.valuesCut,
    duration_ms: output.durationMs,
  };
  return {
    structured,
    text: `${summary(output, caps.maxRows, caps.maxBytes)}\n${ctx.untrusted(rowsText(output), `postgres rows (${deps.db.database})`)}`,
  };
}

/** `postgres_query`: one read-only SELECT under every layer of the guard. */
export function queryTool(deps: PostgresDeps) {
  const { config } = deps;
  return defineTool({
    name: 'postgres_query',
    title: 'Run a read-only SQL query',
    description:
      'One read-only SELECT (CTEs allowed): typed columns and rows. Pass values as params, not in the SQL.',
    access: 'read',
    annotations: READ_ONLY_ANNOTATIONS,
    input: z.strictObject({
      sql: z.string().min(1).max(100_000).describe('PostgreSQL SELECT.'),
      params: z.array(QueryParamSchema).max(100).optional().describe('Values of $1, $2, …'),
      max_rows: z
        .number()
        .int()
        .min(1)
        .max(100_000)
        // The cap is checked, not listed: the listing stays the same in every deployment (the
        // instructions name the cap), and a call above it is refused by name, as before.
        .refine((n) => n <= config.POSTGRES_MAX_ROWS, {
          message: `At most ${config.POSTGRES_MAX_ROWS}, the server's row cap.`,
        })
        .optional()
        .describe("Fewer rows than the server's cap."),
    }),
    output: QueryOutputSchema,
    target: () => deps.targets,
    auditArgs: config.POSTGRES_AUDIT_SQL ? 'redacted' : 'shape',
    // Room for the row budget plus column metadata; the rows themselves are capped below it.
    maxOutputBytes: config.POSTGRES_MAX_BYTES * 2 + 64 * 1024,
    async handler(args, ctx) {
      const maxRows = args.max_rows ?? config.POSTGRES_MAX_ROWS;
      const output = await deps.sql.query(ctx, args.sql, args.params ?? [], maxRows);
      return queryAnswer(output, { maxRows, maxBytes: config.POSTGRES_MAX_BYTES }, ctx, deps);
    },
  });
}
