import { definePrompt } from '@gatehouse/core';
import type { PromptMessage } from '@modelcontextprotocol/server';
import type { PostgresDeps } from '../deps.js';
import { listTables } from '../sql/introspect.js';
import { describeNamed, embeddedSchemas } from './embed.js';

const MAX_TABLES = 6;

function words(text: string): Set<string> {
  return new Set(
    text
      .toLowerCase()
      .split(/[^a-z0-9_]+/)
      .filter((w) => w.length > 2)
      .flatMap((w) => [w, w.replace(/(?:ies)$/, 'y').replace(/s$/, '')]),
  );
}

/** Prompt: write a safe query for a question, with the relevant table schemas embedded. */
export function writeQueryPrompt(deps: PostgresDeps) {
  const { db, config } = deps;
  return definePrompt({
    name: 'postgres_write_safe_query',
    title: 'Write a safe SQL query',
    description: `Turn a question into one read-only SELECT on the database, with the schemas of the relevant tables embedded so the query uses real column names.`,
    arguments: {
      question: { description: 'The question to answer with data.', required: true },
      tables: {
        description:
          'Comma-separated table names to use (optional; by default the tables whose names match the question).',
      },
    },
    handler: async ({ question, tables }, ctx) => {
      const described = await db.transaction(ctx, async (client, role) => {
        let names: Array<{ schema?: string; name: string }>;
        if (tables !== undefined && tables.trim() !== '') {
          names = tables
            .split(',')
            .map((t) => t.trim())
            .filter((t) => t !== '')
            .slice(0, MAX_TABLES)
            .map((t) => {
              const [a, b] = t.split('.');
              return b === undefined ? { name: a! } : { schema: a!, name: b };
            });
        } else {
          const wanted = words(question);
          const { tables: all } = await listTables(client, db.schemas, { limit: 2000 });
          const scored = all
            .map((t) => ({
              t,
              score: [...words(t.name.replace(/_/g, ' '))].filter((w) => wanted.has(w)).length,
            }))
            .sort((a, b) => b.score - a.score);
          const picked =
            all.length <= MAX_TABLES ? all : scored.filter((s) => s.score > 0).map((s) => s.t);
          names = picked.slice(0, MAX_TABLES).map((t) => ({ schema: t.schema, name: t.name }));
        }
        return describeNamed(deps.sql, client, role, names);
      });
      const messages: PromptMessage[] = [
        {
          role: 'user',
          content: {
            type: 'text',
            text: `Write one read-only PostgreSQL query that answers this question about the "${db.database}" database:

${question}

Rules:
- One SELECT statement (CTEs allowed); no writes, DDL, locking clauses or side-effecting functions — the server refuses them.
- Only the schemas ${db.schemas.join(', ')} exist for you. Use the table schemas attached below; if they are not enough, call postgres_list_tables / postgres_describe_table.
- Put literal values in params ($1, $2, …), not in the SQL text.
- Results are capped at ${config.POSTGRES_MAX_ROWS} rows: aggregate and filter in SQL, add ORDER BY and LIMIT.
- Masked columns may only be selected plainly; never filter, join, sort or group by them.
Show the SQL, run it with postgres_query, then answer the question from the result (say so if it was truncated).${described.length === 0 ? '\n\nNo matching tables were found; start with postgres_list_tables.' : ''}`,
          },
        },
        ...embeddedSchemas(db, described),
      ];
      return { description: `Safe query for: ${question.slice(0, 100)}`, messages };
    },
  });
}
