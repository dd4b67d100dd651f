import { READ_ONLY_ANNOTATIONS, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { PostgresDeps } from '../deps.js';
import { planText } from '../sql/plan-text.js';
import { QueryParamSchema } from './query.js';

/** `postgres_explain`: the planner's view of a SELECT, as JSON and text. */
export function explainTool(deps: PostgresDeps) {
  const { config } = deps;
  return defineTool({
    name: 'postgres_explain',
    title: 'Explain a query plan',
    description:
      'The plan of one SELECT, to see why it is slow; run only with analyze. No estimates when it reads a masked column.',
    access: 'read',
    annotations: READ_ONLY_ANNOTATIONS,
    input: z.strictObject({
      sql: z.string().min(1).max(100_000).describe('The SELECT, without EXPLAIN.'),
      params: z.array(QueryParamSchema).max(100).optional().describe('Values of $1, $2, …'),
      analyze: z.boolean().optional().describe('Run it for actual times, if allowed.'),
      verbose: z.boolean().optional().describe('Name output columns and schemas.'),
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
