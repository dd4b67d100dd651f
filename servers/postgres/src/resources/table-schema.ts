import { PolicyError, defineResource } from '@gatehouse/core';
import type { PostgresDeps } from '../deps.js';
import { describeTable, listTables, resolveTable } from '../sql/introspect.js';

const LIST_LIMIT = 1000;

/** What `list` answers, or nothing for a caller with no role in the role map (rule `role_map`). */
async function unlessUnmapped<T>(list: () => Promise<T[]>): Promise<T[]> {
  try {
    return await list();
  } catch (error) {
    if (error instanceof PolicyError && error.rule === 'role_map') return [];
    throw error;
  }
}

/** `postgres://{database}/{schema}/{table}/schema`: one table's description, listed and completable. */
export function tableSchemaResource(deps: PostgresDeps) {
  const { db } = deps;
  const base = `postgres://${encodeURIComponent(db.database)}`;
  return defineResource({
    kind: 'template',
    name: 'postgres_table_schema',
    uriTemplate: 'postgres://{database}/{schema}/{table}/schema',
    title: 'Table schema',
    description:
      'Columns (types, nullability, defaults, masking), keys, foreign keys and indexes of one table or view.',
    mimeType: 'application/json',
    list: async (ctx) => {
      // A caller the role map does not name lists no table (and no failed resources/list):
      // reading one is refused with the reason.
      const tables = await unlessUnmapped(
        async () =>
          (
            await db.transaction(ctx, (client) =>
              listTables(client, db.schemas, { limit: LIST_LIMIT }),
            )
          ).tables,
      );
      return tables.map((t) => ({
        uri: `${base}/${encodeURIComponent(t.schema)}/${encodeURIComponent(t.name)}/schema`,
        name: `${t.schema}.${t.name}`,
        title: `${t.kind} ${t.schema}.${t.name}`,
        ...(t.comment === null ? {} : { description: t.comment }),
        mimeType: 'application/json',
      }));
    },
    complete: {
      database: (value) => (db.database.startsWith(value) ? [db.database] : []),
      schema: (value) => db.schemas.filter((s) => s.startsWith(value)),
      table: async (value, { arguments: args, principal, signal, deadline }) => {
        const schemas =
          args.schema !== undefined && db.schemas.includes(args.schema)
            ? [args.schema]
            : db.schemas;
        const pattern = `${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
        // As the caller's role, within the completion's own deadline; nothing for a caller the
        // role map does not name.
        const tables = await unlessUnmapped(
          async () =>
            (
              await db.transaction({ signal, deadline, principal }, (client) =>
                listTables(client, schemas, { pattern, limit: 100 }),
              )
            ).tables,
        );
        return [...new Set(tables.map((t) => t.name))];
      },
    },
    target: (v) => `pg:${db.database}/${v.schema ?? ''}/${v.table ?? ''}`,
    read: async (_uri, variables, ctx) => {
      const database = decodeURIComponent(variables.database ?? '');
      const schema = decodeURIComponent(variables.schema ?? '');
      const table = decodeURIComponent(variables.table ?? '');
      if (database !== db.database || !db.schemas.includes(schema)) return undefined;
      const description = await db.transaction(ctx, async (client, role) => {
        const found = await resolveTable(client, db.schemas, table, schema);
        return found === undefined
          ? undefined
          : describeTable(
              client,
              found.oid,
              await deps.sql.maskedColumnsOf(client, role, found.schema, table),
            );
      });
      return description === undefined
        ? undefined
        : { text: JSON.stringify(description, null, 1), mimeType: 'application/json' };
    },
  });
}
