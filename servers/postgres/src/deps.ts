import type { PostgresDatabase } from './client.js';
import type { PostgresConfig } from './config.js';
import type { SqlService } from './service.js';

/** What the tools, resources and prompts share: built once per process by the factory. */
export interface PostgresDeps {
  readonly config: PostgresConfig;
  readonly db: PostgresDatabase;
  readonly sql: SqlService;
  /** `pg:<database>/<schema>` of each allowed schema (the targets policy and audit see). */
  readonly targets: readonly string[];
}
