import type { ClientBase } from 'pg';
import * as z from 'zod';

/**
 * Catalog reads behind the schema tools, resources and prompts. Every query is confined to the
 * allowed schemas and runs inside the same read-only transaction as a user query.
 */

const KINDS: Record<string, string> = {
  r: 'table',
  p: 'partitioned table',
  v: 'view',
  m: 'materialized view',
  f: 'foreign table',
};

export const TableSummarySchema = z.object({
  schema: z.string(),
  name: z.string(),
  kind: z.string().describe('table, partitioned table, view, materialized view, foreign table'),
  row_estimate: z
    .number()
    .nullable()
    .describe('Planner estimate (pg_class.reltuples); null when never analysed'),
  comment: z.string().nullable(),
  readable: z
    .boolean()
    .describe(
      'Whether the role this call runs as (the caller’s, with a role map) may SELECT from it',
    ),
});
export type TableSummary = z.infer<typeof TableSummarySchema>;

/** Tables, views and friends in `schemas` (optionally one schema, a name pattern), by name. */
export async function listTables(
  client: ClientBase,
  schemas: readonly string[],
  options: { pattern?: string; limit: number },
): Promise<{ tables: TableSummary[]; truncated: boolean }> {
  const found = await client.query<{
    schema: string;
    name: string;
    relkind: string;
    reltuples: number;
    comment: string | null;
    readable: boolean;
  }>(
    `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS relkind,
            c.reltuples::float8 AS reltuples,
            pg_catalog.obj_description(c.oid, 'pg_class') AS comment,
            pg_catalog.has_table_privilege(c.oid, 'SELECT') AS readable
     FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
       AND NOT c.relispartition
       AND ($2::text IS NULL OR c.relname ILIKE $2)
     ORDER BY array_position($1::text[], n.nspname::text), c.relname
     LIMIT $3`,
    [schemas, options.pattern ?? null, options.limit + 1],
  );
  const rows = found.rows.slice(0, options.limit);
  return {
    tables: rows.map((r) => ({
      schema: r.schema,
      name: r.name,
      kind: KINDS[r.relkind] ?? r.relkind,
      row_estimate: r.reltuples < 0 ? null : Math.round(r.reltuples),
      comment: r.comment,
      readable: r.readable,
    })),
    truncated: found.rows.length > options.limit,
  };
}

export const TableDescriptionSchema = z.object({
  schema: z.string(),
  name: z.string(),
  kind: z.string(),
  comment: z.string().nullable(),
  row_estimate: z.number().nullable(),
  columns: z.array(
    z.object({
      name: z.string(),
      type: z.string(),
      nullable: z.boolean(),
      default: z.string().nullable(),
      comment: z.string().nullable(),
      masked: z.boolean().optional().describe('Values come back as [masked] in query results'),
    }),
  ),
  primary_key: z.array(z.string()),
  unique_constraints: z.array(z.object({ name: z.string(), columns: z.array(z.string()) })),
  foreign_keys: z.array(
    z.object({
      name: z.string(),
      columns: z.array(z.string()),
      references: z.object({
        schema: z.string(),
        table: z.string(),
        columns: z.array(z.string()),
      }),
    }),
  ),
  referenced_by: z.array(
    z.object({ schema: z.string(), table: z.string(), columns: z.array(z.string()) }),
  ),
  indexes: z.array(
    z.object({
      name: z.string(),
      unique: z.boolean(),
      primary: z.boolean(),
      definition: z.string(),
    }),
  ),
});
export type TableDescription = z.infer<typeof TableDescriptionSchema>;

/** Finds the schema of `table`: the given one, or the first allowed schema that has it. */
export async function resolveTable(
  client: ClientBase,
  schemas: readonly string[],
  table: string,
  schema?: string,
): Promise<{ oid: string; schema: string } | undefined> {
  const found = await client.query<{ oid: string; schema: string }>(
    `SELECT c.oid::text AS oid, n.nspname AS schema
     FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relname = $1 AND n.nspname = ANY($2::text[]) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
     ORDER BY array_position($2::text[], n.nspname::text)
     LIMIT 1`,
    [table, schema === undefined ? schemas : [schema]],
  );
  return found.rows[0];
}

/** Everything about one table a model needs to write a query against it. */
export async function describeTable(
  client: ClientBase,
  oid: string,
  masked: (column: string) => boolean,
): Promise<TableDescription> {
  const head = await client.query<{
    schema: string;
    name: string;
    relkind: string;
    reltuples: number;
    comment: string | null;
  }>(
    `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS relkind,
            c.reltuples::float8 AS reltuples, pg_catalog.obj_description(c.oid, 'pg_class') AS comment
     FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = $1::oid`,
    [oid],
  );
  const t = head.rows[0]!;
  const columns = await client.query<{
    name: string;
    type: string;
    nullable: boolean;
    default: string | null;
    comment: string | null;
  }>(
    `SELECT a.attname AS name, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
            NOT a.attnotnull AS nullable,
            pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default,
            pg_catalog.col_description(a.attrelid, a.attnum) AS comment
     FROM pg_catalog.pg_attribute a
     LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum`,
    [oid],
  );
  const constraints = await client.query<{
    name: string;
    type: string;
    columns: string[];
    ref_schema: string | null;
    ref_table: string | null;
    ref_columns: string[] | null;
  }>(
    `SELECT con.conname AS name, con.contype::text AS type,
            ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
                  JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n
                  ORDER BY k.i) AS columns,
            rn.nspname AS ref_schema, rc.relname AS ref_table,
            CASE WHEN con.contype = 'f' THEN
              ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
                    JOIN pg_catalog.pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n
                    ORDER BY k.i) END AS ref_columns
     FROM pg_catalog.pg_constraint con
     LEFT JOIN pg_catalog.pg_class rc ON rc.oid = con.confrelid
     LEFT JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
     WHERE con.conrelid = $1::oid AND con.contype IN ('p', 'u', 'f')
     ORDER BY con.conname`,
    [oid],
  );
  const referencedBy = await client.query<{ schema: string; table: string; columns: string[] }>(
    `SELECT n.nspname AS schema, c.relname AS table,
            ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
                  JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n
                  ORDER BY k.i) AS columns
     FROM pg_catalog.pg_constraint con
     JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE con.confrelid = $1::oid AND con.contype = 'f'
     ORDER BY 1, 2`,
    [oid],
  );
  const indexes = await client.query<{
    name: string;
    unique: boolean;
    primary: boolean;
    definition: string;
  }>(
    `SELECT ic.relname AS name, i.indisunique AS unique, i.indisprimary AS primary,
            pg_catalog.pg_get_indexdef(i.indexrelid) AS definition
     FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
     WHERE i.indrelid = $1::oid
     ORDER BY i.indisprimary DESC, ic.relname`,
    [oid],
  );
  return {
    schema: t.schema,
    name: t.name,
    kind: KINDS[t.relkind] ?? t.relkind,
    comment: t.comment,
    row_estimate: t.reltuples < 0 ? null : Math.round(t.reltuples),
    columns: columns.rows.map((c) => {
      const hidden = masked(c.name);
      // A masked column's default could carry the value pattern; it is hidden too.
      return hidden ? { ...c, default: null, masked: true } : c;
    }),
    primary_key: constraints.rows.find((c) => c.type === 'p')?.columns ?? [],
    unique_constraints: constraints.rows
      .filter((c) => c.type === 'u')
      .map((c) => ({ name: c.name, columns: c.columns })),
    foreign_keys: constraints.rows
      .filter((c) => c.type === 'f')
      .map((c) => ({
        name: c.name,
        columns: c.columns,
        references: {
          schema: c.ref_schema ?? '',
          table: c.ref_table ?? '',
          columns: c.ref_columns ?? [],
        },
      })),
    referenced_by: referencedBy.rows,
    indexes: indexes.rows,
  };
}

/** A compact text form of a table description, for the model and for prompts. */
export function describeTableText(d: TableDescription): string {
  const lines = [
    `${d.kind} ${d.schema}.${d.name}${d.row_estimate === null ? '' : ` (~${d.row_estimate} rows)`}${d.comment ? ` — ${d.comment}` : ''}`,
  ];
  for (const c of d.columns) {
    const flags = [
      c.nullable ? '' : 'not null',
      c.default === null ? '' : `default ${c.default}`,
      c.masked === true ? 'MASKED' : '',
      d.primary_key.includes(c.name) ? 'pk' : '',
    ].filter((f) => f !== '');
    lines.push(
      `  ${c.name} ${c.type}${flags.length > 0 ? ` [${flags.join(', ')}]` : ''}${c.comment ? ` — ${c.comment}` : ''}`,
    );
  }
  for (const fk of d.foreign_keys) {
    lines.push(
      `  fk (${fk.columns.join(', ')}) → ${fk.references.schema}.${fk.references.table}(${fk.references.columns.join(', ')})`,
    );
  }
  for (const r of d.referenced_by) {
    lines.push(`  referenced by ${r.schema}.${r.table}(${r.columns.join(', ')})`);
  }
  for (const i of d.indexes) lines.push(`  index ${i.definition}`);
  return lines.join('\n');
}
