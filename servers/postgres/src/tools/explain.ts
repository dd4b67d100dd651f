import { READ_ONLY_ANNOTATIONS, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { PostgresDeps } from '../deps.js';
import { planText } from '../plan-text.js';
import { QueryParamSchema } from './query.js';

/** `postgres_explain`: the planner's view of a SELECT, as JSON and text. */
export function explainTool(deps: PostgresDeps) {
  const { config } = deps;
  return defineTool({
    name: 'postgres_explain',
    title: 'Explain a query plan',
    description: `Show PostgreSQL's execution plan for one SELECT on the database (EXPLAIN, as JSON and as text) to find why a query is slow: sequential scans, missing indexes, bad row estimates, expensive sorts and joins. The query is planned, not run; where the server allows it (POSTGRES_ALLOW_EXPLAIN_ANALYZE), analyze: true also runs it (read-only, under the statement timeout) and the plan shows actual times and rows. A query that reads a masked column is explained without the planner's estimates (rows, widths, costs), which come from the masked values; one that filters, joins or sorts on it is refused, like in postgres_query.`,
    access: 'read',
    annotations: READ_ONLY_ANNOTATIONS,
    input: z.strictObject({
      sql: z.string().min(1).max(100_000).describe('The SELECT to explain, without EXPLAIN.'),
      params: z
        .array(QueryParamSchema)
        .max(100)
        .optional()
        .describe('Values for $1, $2, … in the SQL, in order.'),
      analyze: z
        .boolean()
        .optional()
        .describe(
          'Also run the query and report actual times and row counts (default false; refused unless the server allows it).',
        ),
      verbose: z.boolean().optional().describe('Include output columns and schema names.'),
    }),
    output: z.object({
      plan: z.unknown().describe('EXPLAIN (FORMAT JSON) output'),
      text: z.string().describe('The same plan as indented text'),
      analyzed: z.boolean(),
      estimates: z
        .boolean()
        .describe(
          "False when the planner's estimates were left out (the query reads a masked column)",
        ),
    }),
    target: () => deps.targets,
    auditArgs: config.POSTGRES_AUDIT_SQL ? 'redacted' : 'shape',
    async handler(args, ctx) {
      const analyzed = args.analyze === true;
      const { plan, estimates } = await deps.sql.explain(ctx, args.sql, args.params ?? [], {
        analyze: analyzed,
        verbose: args.verbose === true,
      });
      const text = `${estimates ? '' : "(The planner's estimates are left out: the query reads a masked column.)\n"}${planText(plan)}`;
      return { structured: { plan, text, analyzed, estimates }, text };
    },
  });
}
