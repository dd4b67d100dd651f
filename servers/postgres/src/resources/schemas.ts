import { defineResource } from '@gatehouse/core';
import type { PostgresDeps } from '../deps.js';
import { listTables } from '../sql/introspect.js';

/** `postgres://{database}/schemas`: the allowed schemas and what is in them. */
export function schemasResource(deps: PostgresDeps) {
  const { db } = deps;
  return defineResource({
    kind: 'static',
    name: 'postgres_schemas',
    uri: `postgres://${encodeURIComponent(db.database)}/schemas`,
    title: 'Schemas and their tables',
    description:
      'The schemas this server exposes, each with its tables and views (kind, estimated rows, comment).',
    mimeType: 'application/json',
    target: `pg:${db.database}`,
    read: async (ctx) => {
      const { tables, truncated } = await db.transaction(ctx, (client) =>
        listTables(client, db.schemas, { limit: 5000 }),
      );
      const schemas = db.schemas.map((schema) => ({
        schema,
        tables: tables
          .filter((t) => t.schema === schema)
          .map(({ name, kind, row_estimate, comment }) => ({ name, kind, row_estimate, comment })),
      }));
      return {
        text: JSON.stringify({ database: db.database, schemas, truncated }, null, 1),
        mimeType: 'application/json',
      };
    },
  });
}
