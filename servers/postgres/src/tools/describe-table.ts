import { READ_ONLY_ANNOTATIONS, ToolError, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { PostgresDeps } from '../deps.js';
import { requireAllowedSchema } from '../deps.js';
import {
  TableDescriptionSchema,
  describeTable,
  describeTableText,
  resolveTable,
} from '../sql/introspect.js';

/** `postgres_describe_table`: columns, keys, relationships and indexes of one table. */
export function describeTableTool(deps: PostgresDeps) {
  const { db } = deps;
  return defineTool({
    name: 'postgres_describe_table',
    title: 'Describe a table',
    description:
      'Columns (type, nullable, default, comment, masked), keys, foreign keys both ways and indexes of a table or view.',
    access: 'read',
    annotations: READ_ONLY_ANNOTATIONS,
    input: z.strictObject({
      table: z.string().min(1).max(63).describe('Name as listed.'),
      schema: z
        .string()
        .min(1)
        .max(63)
        .optional()
        .describe('Default: the first exposed schema that has it.'),
    }),
    output: TableDescriptionSchema,
    target: (args) =>
      args.schema === undefined ? deps.targets : `pg:${db.database}/${args.schema}/${args.table}`,
    async handler(args, ctx) {
      if (args.schema !== undefined) requireAllowedSchema(db, args.schema);
      const description = await db.transaction(ctx, async (client, role) => {
        const found = await resolveTable(client, db.schemas, args.table, args.schema);
        if (found === undefined) return undefined;
        const masked = await deps.sql.maskedColumnsOf(client, role, found.schema, args.table);
        return describeTable(client, found.oid, masked);
      });
      if (description === undefined) {
        throw new ToolError(
          `No table or view "${args.table}" in ${args.schema ?? db.schemas.join(', ')}. Use postgres_list_tables to see the names.`,
          { code: 'not_found' },
        );
      }
      return { structured: description, text: describeTableText(description) };
    },
  });
}
