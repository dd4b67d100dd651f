import { PolicyError } from '@gatehouse/core';
import type { PostgresDatabase } from './sql/database.js';
import type { PostgresConfig } from './config.js';
import type { SqlService } from './sql/service.js';

/** What the tools, resources and prompts share: built once per process by the factory. */
export interface PostgresDeps {
  readonly config: PostgresConfig;
  readonly db: PostgresDatabase;
  readonly sql: SqlService;
  /** `pg:<database>/<schema>` of each allowed schema (the targets policy and audit see). */
  readonly targets: readonly string[];
  /** Whether free SQL is offered (POSTGRES_FREE_SQL): the query and explain tools and prompts. */
  readonly freeSql: boolean;
  /** The names of the curated query tools (POSTGRES_QUERIES_FILE), in the file's order. */
  readonly curated: readonly string[];
}

/** Refuses a schema outside POSTGRES_SCHEMAS (audited as denied, rule schema_allow_list). */
export function requireAllowedSchema(db: PostgresDatabase, schema: string): void {
  if (db.schemas.includes(schema)) return;
  throw new PolicyError(
    'schema_allow_list',
    `Schema "${schema}" is not available; the allowed schemas are ${db.schemas.join(', ')}.`,
    { code: 'schema_not_allowed' },
  );
}
