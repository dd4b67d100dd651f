import { READ_ONLY_ANNOTATIONS, defineTool } from '@gatehouse/core';
import { boundParameters, curatedDescription, inputSchema, statementValues } from '../curated.js';
import type { CuratedQuery } from '../curated.js';
import type { PostgresDeps } from '../deps.js';
import type { QueryParam } from '../sql/read-only-statement.js';
import { QueryOutputSchema, queryAnswer } from './query.js';

/**
 * A curated query as a tool (curated.ts, ADR 0021): the model fills in the parameters the entry
 * declares, the caller's bound ones come from its credential, and the statement runs under every
 * layer free SQL runs under, with the entry's caps where they are tighter.
 */
export function curatedTool(deps: PostgresDeps, query: CuratedQuery) {
  const { config } = deps;
  const caps = {
    maxRows: query.max_rows ?? config.POSTGRES_MAX_ROWS,
    maxBytes: query.max_bytes ?? config.POSTGRES_MAX_BYTES,
  };
  return defineTool({
    name: query.name,
    title: query.title,
    description: curatedDescription(query, config),
    access: 'read',
    scope: query.scope ?? 'postgres:read',
    annotations: READ_ONLY_ANNOTATIONS,
    input: inputSchema(query),
    output: QueryOutputSchema,
    bound: boundParameters(query),
    target: () => deps.targets,
    auditArgs: config.POSTGRES_AUDIT_SQL ? 'redacted' : 'shape',
    ...(query.timeout_ms === undefined ? {} : { deadlineMs: query.timeout_ms }),
    maxOutputBytes: caps.maxBytes * 2 + 64 * 1024,
    async handler(args, ctx) {
      const values = statementValues(query, args, ctx.bound) as QueryParam[];
      const output = await deps.sql.query(ctx, query.sql, values, caps.maxRows, caps.maxBytes);
      return queryAnswer(output, caps, ctx, deps);
    },
  });
}
