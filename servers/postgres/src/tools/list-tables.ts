import { READ_ONLY_ANNOTATIONS, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { PostgresDeps } from '../deps.js';
import { requireAllowedSchema } from '../deps.js';
import { TableSummarySchema, listTables } from '../sql/introspect.js';

const LIMIT = 1000;

/** `postgres_list_tables`: what there is to query, with sizes and comments. */
export function listTablesTool(deps: PostgresDeps) {
  const { db } = deps;
  return defineTool({
    name: 'postgres_list_tables',
    title: 'List tables and views',
    description: 'Tables and views exposed: kind, estimated rows, comment, readable. Start here.',
    access: 'read',
    annotations: READ_ONLY_ANNOTATIONS,
    input: z.strictObject({
      schema: z.string().min(1).max(63).optional().describe('Only this schema.'),
      name_pattern: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('ILIKE pattern on the name, e.g. %order%.'),
    }),
    output: z.object({
      tables: z.array(TableSummarySchema),
      truncated: z.boolean().describe(`True when more than ${LIMIT} matched; narrow the pattern`),
    }),
    target: (args) =>
      args.schema === undefined ? deps.targets : `pg:${db.database}/${args.schema}`,
    async handler(args, ctx) {
      if (args.schema !== undefined) requireAllowedSchema(db, args.schema);
      const schemas = args.schema === undefined ? db.schemas : [args.schema];
      const result = await db.transaction(ctx, (client) =>
        listTables(client, schemas, {
          ...(args.name_pattern === undefined ? {} : { pattern: args.name_pattern }),
          limit: LIMIT,
        }),
      );
      const lines = result.tables.map(
        (t) =>
          `${t.schema}.${t.name} (${t.kind}${t.row_estimate === null ? '' : `, ~${t.row_estimate} rows`}${t.readable ? '' : ', NOT readable'})${t.comment ? ` — ${t.comment}` : ''}`,
      );
      const head = `${result.tables.length} relation(s)${result.truncated ? ` (first ${LIMIT}; narrow with name_pattern)` : ''}`;
      return { structured: result, text: [head, ...lines].join('\n') };
    },
  });
}
