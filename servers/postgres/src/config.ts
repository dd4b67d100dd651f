import { defineConfig, envBoolean, envInt, envList, secret } from '@gatehouse/core';
import * as z from 'zod';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;
const MASK_PATTERN = /^(?:(?:\*|[A-Za-z_][\w$]*)\.)?(?:\*|[A-Za-z_][\w$]*)\.[A-Za-z_][\w$]*$/;

const ENCODE_HINT =
  'percent-encode / @ # ? : % and spaces in the user name and password (encodeURIComponent)';

/**
 * Why a connection URL cannot be used as written, in words that never repeat it: a URL parser
 * reads an unencoded `/`, `#` or `?` in a password as the end of the host part, so the password
 * would be reported as a host name or the whole URL printed in an "Invalid URL" error.
 */
function connectionUrlProblem(value: string): string | undefined {
  const rest = value.replace(/^postgres(?:ql)?:\/\//, '');
  const end = rest.search(/[/?#]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  const path = end === -1 ? '' : rest.slice(end).split(/[?#]/)[0]!;
  // An @ after the end of the host part: the user information held a /, ? or #.
  if (
    rest.includes('#') ||
    path.includes('@') ||
    (!authority.includes('@') && rest.includes('@'))
  ) {
    return `a / # or ? in the user name or password ends the host part early: ${ENCODE_HINT}`;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `not a valid connection URL: ${ENCODE_HINT}`;
  }
  if (url.hostname === '' && !url.searchParams.has('host')) {
    return 'no host (postgres://user:password@host:5432/database, or ?host=/socket/dir)';
  }
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    decodeURIComponent(url.pathname);
  } catch {
    return `a % that is not a valid percent-encoding: ${ENCODE_HINT}`;
  }
  return undefined;
}

/** The Postgres server's configuration: the core's keys plus `POSTGRES_*`. */
export const PostgresConfigSchema = defineConfig(
  {
    POSTGRES_URL: secret(
      z
        .string()
        .regex(/^postgres(?:ql)?:\/\//, 'expected a postgres:// or postgresql:// connection URL')
        .superRefine((value, ctx) => {
          const problem = connectionUrlProblem(value);
          // The message never contains the value; `safe` lets it through the secret filter.
          if (problem !== undefined)
            ctx.addIssue({ code: 'custom', message: problem, params: { safe: true } });
        }),
    ).describe(
      'Connection URL of the read-only role (postgres://user:password@host:5432/db?sslmode=verify-full).',
    ),
    POSTGRES_SCHEMAS: envList
      .pipe(
        z
          .array(z.string().regex(IDENTIFIER, 'expected plain schema names such as public,sales'))
          .min(1),
      )
      .default(['public'])
      .describe(
        'The only schemas the tools can see and query (comma-separated); the first is searched first.',
      ),
    POSTGRES_MAX_ROWS: envInt(1, 100_000)
      .default(500)
      .describe('Most rows a query returns; more are cut and reported as truncated.'),
    POSTGRES_MAX_BYTES: envInt(1024, 16 * 1024 * 1024)
      .default(128 * 1024)
      .describe('Most bytes of row data (as JSON) a query returns; more are cut and reported.'),
    POSTGRES_STATEMENT_TIMEOUT_MS: envInt(100, 3_600_000)
      .default(15_000)
      .describe('statement_timeout of every query (the call deadline lowers it further).'),
    POSTGRES_LOCK_TIMEOUT_MS: envInt(10, 3_600_000)
      .default(2_000)
      .describe('lock_timeout of every query: a query never waits long behind a lock.'),
    POSTGRES_CONNECT_TIMEOUT_MS: envInt(100, 120_000)
      .default(5_000)
      .describe('How long to wait for a connection to PostgreSQL.'),
    POSTGRES_POOL_SIZE: envInt(1, 100).default(5).describe('Connections kept in the pool.'),
    POSTGRES_MASK_COLUMNS: envList
      .pipe(
        z.array(
          z
            .string()
            .regex(
              MASK_PATTERN,
              'expected column patterns such as *.email, customers.phone or hr.salaries.amount',
            ),
        ),
      )
      .default([])
      .describe(
        'Columns whose values are masked: table.column or schema.table.column, * for any table or schema.',
      ),
    POSTGRES_ALLOW_EXPLAIN_ANALYZE: envBoolean
      .default(false)
      .describe(
        'Allow EXPLAIN ANALYZE (it runs the query, read-only and under the same timeouts).',
      ),
    POSTGRES_ALLOW_FUNCTIONS: envList
      .pipe(z.array(z.string().regex(/^[A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)?$/)))
      .default([])
      .describe(
        'Volatile functions to allow anyway (names, optionally schema-qualified); the denied list stays denied.',
      ),
    POSTGRES_ALLOW_PRIVILEGED_ROLE: envBoolean
      .default(false)
      .describe(
        'Start even when the role can write (superuser, owner, write grants); logged loudly and audited.',
      ),
    POSTGRES_AUDIT_SQL: envBoolean
      .default(false)
      .describe(
        'Keep the SQL text and params of each query in its audit record (default: their shape and SHA-256 only, as literals can hold personal data).',
      ),
    POSTGRES_QUERIES_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A YAML file of curated queries, each a tool the model can only fill in (queries.schema.json; the README, "Curated queries"). Read at start: a change takes effect on restart.',
      ),
    POSTGRES_FREE_SQL: envBoolean
      .default(true)
      .describe(
        'Offer free SQL (postgres_query, postgres_explain and the prompts that write SQL). false: the curated queries and the schema tools and resources are all the model gets.',
      ),
    POSTGRES_ROLE_MAP_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A YAML file mapping each verified caller to the PostgreSQL role its calls run as (role-map.schema.json; the README, "A role per caller"). Read at start.',
      ),
    POSTGRES_ROLE: z
      .string()
      .min(1)
      .optional()
      .describe(
        "One PostgreSQL role every call runs as (SET LOCAL ROLE), such as the local user's own over stdio; instead of POSTGRES_ROLE_MAP_FILE.",
      ),
    POSTGRES_CATALOG_TTL_MS: envInt(0, 3_600_000)
      .default(60_000)
      .describe(
        'How long function volatility and masked-column lookups are cached (0: look up every query).',
      ),
  },
  {
    // The names other tools read for a connection URL (a misspelling, POSTGRES_URI, is found anyway).
    aliases: {
      POSTGRES_URL: [
        'DATABASE_URL',
        'POSTGRES_CONNECTION_STRING',
        'POSTGRES_DSN',
        'PG_URL',
        'PGURL',
      ],
    },
  },
);

/** The parsed configuration of the Postgres server. */
export type PostgresConfig = z.output<typeof PostgresConfigSchema>;
