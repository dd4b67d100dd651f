import type { PromptMessage } from '@modelcontextprotocol/server';
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../sql/database.js';
import type { SqlService } from '../sql/service.js';
import { describeTable, describeTableText, resolveTable } from '../sql/introspect.js';
import type { TableDescription } from '../sql/introspect.js';

/** Describes the named tables that exist in the allowed schemas, each once, in order. */
export async function describeNamed(
  sql: SqlService,
  client: PoolClient,
  role: string | undefined,
  names: ReadonlyArray<{ schema?: string; name: string }>,
): Promise<TableDescription[]> {
  const { db } = sql;
  const out: TableDescription[] = [];
  const seen = new Set<string>();
  for (const n of names) {
    if (n.schema !== undefined && !db.schemas.includes(n.schema)) continue;
    const found = await resolveTable(client, db.schemas, n.name, n.schema);
    if (found === undefined || seen.has(found.oid)) continue;
    seen.add(found.oid);
    out.push(
      await describeTable(
        client,
        found.oid,
        await sql.maskedColumnsOf(client, role, found.schema, n.name),
      ),
    );
  }
  return out;
}

/** Table descriptions as embedded resources (their `…/schema` URIs), one message each. */
export function embeddedSchemas(
  db: PostgresDatabase,
  described: readonly TableDescription[],
): PromptMessage[] {
  const base = `postgres://${encodeURIComponent(db.database)}`;
  return described.map((d) => ({
    role: 'user',
    content: {
      type: 'resource',
      resource: {
        uri: `${base}/${encodeURIComponent(d.schema)}/${encodeURIComponent(d.name)}/schema`,
        mimeType: 'text/plain',
        text: describeTableText(d),
      },
    },
  }));
}
