import { definePrompt } from '@gatehouse/core';
import type { PostgresDeps } from '../deps.js';
import { requireAllowedSchema } from '../deps.js';
import { listTables } from '../sql/introspect.js';

/** Prompt: get oriented in a schema. */
export function exploreSchemaPrompt(deps: PostgresDeps) {
  const { db } = deps;
  return definePrompt({
    name: 'postgres_explore_schema',
    title: 'Explore a database schema',
    description: `Get oriented in a schema of the database: what the tables hold, how they relate, and which questions they can answer.`,
    arguments: {
      schema: {
        description: 'Schema to explore; default: the first exposed one.',
        complete: (value) => db.schemas.filter((s) => s.startsWith(value)),
      },
    },
    handler: async ({ schema }, ctx) => {
      const chosen = schema ?? db.schemas[0]!;
      requireAllowedSchema(db, chosen);
      const { tables, truncated } = await db.transaction(ctx, (client) =>
        listTables(client, [chosen], { limit: 300 }),
      );
      const listing = tables
        .map(
          (t) =>
            `- ${t.name} (${t.kind}${t.row_estimate === null ? '' : `, ~${t.row_estimate} rows`})${t.comment ? `: ${t.comment}` : ''}`,
        )
        .join('\n');
      return {
        description: `Explore schema ${chosen} of ${db.database}`,
        messages: [
          {
            role: 'user',
            content: {
              type: 'text',
              text: `Help me understand the "${chosen}" schema of the PostgreSQL database "${db.database}".

It contains ${tables.length}${truncated ? '+' : ''} tables and views:
${listing || '(none visible to this server)'}

Use postgres_describe_table on the central tables to learn their columns, keys and foreign keys, then:
1. Summarise what each group of tables represents and how they relate (draw the main foreign-key paths).
2. Point out columns that are masked, tables that are large, and anything that looks unusual.
${
  deps.freeSql
    ? `3. Suggest five concrete business questions this schema can answer, each with the read-only SQL (postgres_query) that would answer it.
Prefer aggregates over fetching raw rows; results are capped at ${deps.config.POSTGRES_MAX_ROWS} rows.`
    : `3. Say which questions the approved queries of this server answer (${deps.curated.join(', ') || 'none are configured'}) — they are the only way to read rows here; free SQL is off.`
}`,
            },
          },
        ],
      };
    },
  });
}
