import { ToolError, definePrompt } from '@gatehouse/core';
import type { PromptMessage } from '@modelcontextprotocol/server';
import type { PostgresDeps } from '../deps.js';
import { describeNamed, embeddedSchemas } from './embed.js';
import { planText } from '../sql/plan-text.js';

/** Prompt: explain why a query is slow, with its plan and the tables it reads embedded. */
export function explainSlowQueryPrompt(deps: PostgresDeps) {
  const { db } = deps;
  return definePrompt({
    name: 'postgres_explain_slow_query',
    title: 'Explain a slow query',
    description: `Diagnose a slow SELECT: its EXPLAIN plan and the schemas and indexes of the tables it reads are embedded.`,
    arguments: {
      sql: { description: 'The slow SELECT statement.', required: true },
    },
    handler: async ({ sql }, ctx) => {
      let plan: string;
      let relations: Array<{ schema?: string; name: string }> = [];
      try {
        const explained = await deps.sql.explain(ctx, sql, [], { analyze: false, verbose: false });
        plan = planText(explained.plan);
        relations = explained.relations.map((r) => ({ schema: r.info.schema, name: r.info.name }));
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        plan = `(no plan: ${error.message})`;
      }
      const described = await db.transaction(ctx, (client, role) =>
        describeNamed(deps.sql, client, role, relations.slice(0, 8)),
      );
      const messages: PromptMessage[] = [
        {
          role: 'user',
          content: {
            type: 'text',
            text: `This query on the PostgreSQL database "${db.database}" is slow:

${sql}

Its plan (EXPLAIN, estimated costs):
${plan}

Explain in plain words where the time most likely goes (sequential scans on large tables, row estimates far from reality, sorts or hashes spilling, nested loops over many rows), then propose concrete fixes in order of impact: indexes (with the CREATE INDEX statement for a DBA to review — this server cannot run it), query rewrites (show the SQL), or statistics. Use postgres_explain to check a rewrite's plan.`,
          },
        },
        ...embeddedSchemas(db, described),
      ];
      return { description: 'Diagnose a slow query', messages };
    },
  });
}
