import { LRUCache } from 'lru-cache';
import type { QueryConfig } from 'pg';
import type { PostgresDatabase, CallBounds } from './client.js';
import type { PostgresConfig } from './config.js';
import { CappedRows } from './execute.js';
import type { QueryOutput } from './execute.js';
import type { QueryParam } from './pipeline.js';
import { SqlRefusedError, analyzeSql } from './sql-guard.js';
import type { SqlAnalysis } from './sql-guard.js';
import { checkCatalog, checkStatic } from './sql-policy.js';
import type { SqlPolicyOptions } from './sql-policy.js';

export type { QueryParam } from './pipeline.js';

/**
 * The one path every SQL text takes: parse and shape check, static rules, then — inside the
 * read-only transaction — catalog rules and capped execution. Tools, resources and prompts all
 * go through it.
 */
export class SqlService {
  readonly db: PostgresDatabase;
  readonly config: PostgresConfig;
  readonly policy: SqlPolicyOptions;

  constructor(db: PostgresDatabase, config: PostgresConfig) {
    this.db = db;
    this.config = config;
    this.policy = { schemas: db.schemas, allowFunctions: config.POSTGRES_ALLOW_FUNCTIONS };
  }

  /**
   * The outcome of {@link check} per SQL text, refusals included: the parse and the static rules
   * depend on the text and this server's fixed configuration only, and a model repeats its
   * queries (and its refused ones). The catalog rules still run in every transaction.
   */
  readonly #checked = new LRUCache<
    string,
    { analysis: SqlAnalysis } | { refused: SqlRefusedError }
  >({
    max: 1_000,
    maxSize: 4 * 1024 * 1024,
    sizeCalculation: (_value, sql) => sql.length + 1,
  });

  /** Parses and applies the rules that need no database (layer 2, first half). */
  async check(sql: string): Promise<SqlAnalysis> {
    const known = this.#checked.get(sql);
    if (known !== undefined) {
      if ('refused' in known) throw known.refused;
      return known.analysis;
    }
    try {
      const analysis = await analyzeSql(sql, {
        allowExplainAnalyze: this.config.POSTGRES_ALLOW_EXPLAIN_ANALYZE,
      });
      checkStatic(analysis, this.policy);
      this.#checked.set(sql, { analysis });
      return analysis;
    } catch (error) {
      if (error instanceof SqlRefusedError) this.#checked.set(sql, { refused: error });
      throw error;
    }
  }

  /** Runs a SELECT (or an EXPLAIN of one) under every layer, returning the capped result. */
  async query(
    bounds: CallBounds,
    sql: string,
    params: readonly QueryParam[],
    maxRows: number,
  ): Promise<QueryOutput & { durationMs: number }> {
    const analysis = await this.check(sql);
    const started = performance.now();
    const output = await this.db.runStatement(bounds, async (client) => {
      const verdict = await checkCatalog(analysis, this.policy, this.db.catalog(client));
      return {
        sql: analysis.statement,
        params,
        sessionCheck: !verdict.sessionSafe,
        rows: new CappedRows(
          { maxRows, maxBytes: this.config.POSTGRES_MAX_BYTES },
          { all: verdict.masked, touched: verdict.touched },
        ),
      };
    });
    return { ...output, durationMs: Math.round((performance.now() - started) * 10) / 10 };
  }

  /** EXPLAIN (FORMAT JSON) of a SELECT; ANALYZE only when configured. */
  async explain(
    bounds: CallBounds,
    sql: string,
    params: readonly QueryParam[],
    options: { analyze: boolean; verbose: boolean },
  ): Promise<{ plan: unknown; analysis: SqlAnalysis }> {
    const analysis = await this.check(sql);
    if (analysis.kind !== 'select') {
      throw new SqlRefusedError(
        'statement_type',
        'pass the query itself, without EXPLAIN; the tool adds it.',
      );
    }
    if (options.analyze && !this.config.POSTGRES_ALLOW_EXPLAIN_ANALYZE) {
      throw new SqlRefusedError(
        'explain_analyze',
        'EXPLAIN ANALYZE runs the query and is disabled on this server (POSTGRES_ALLOW_EXPLAIN_ANALYZE). Call without analyze.',
      );
    }
    // A query with $n placeholders and no values gets a generic plan: prepared, planned with
    // plan_cache_mode = force_generic_plan, deallocated (prepared statements outlive ROLLBACK).
    const generic = !options.analyze && params.length === 0 && analysis.parameterCount > 0;
    const flags = [
      'FORMAT JSON',
      ...(options.analyze ? ['ANALYZE', 'BUFFERS'] : []),
      ...(options.verbose ? ['VERBOSE'] : []),
    ].join(', ');
    const plan = await this.db.transaction(bounds, async (client) => {
      const catalog = this.db.catalog(client);
      // A plan without ANALYZE reads no rows, so masking has nothing to protect there; with
      // ANALYZE the row counts could reveal a filter on a masked column.
      const explained = options.analyze ? analysis : { ...analysis, columns: [] };
      await checkCatalog(explained, this.policy, catalog);
      // queryMode 'extended': even without parameters, the extended protocol (one statement).
      const run = async (text: string, values: unknown[]) =>
        (
          await client.query<{ 'QUERY PLAN': unknown }>({
            text,
            values,
            queryMode: 'extended',
          } as QueryConfig)
        ).rows[0]?.['QUERY PLAN'];
      if (!generic) return run(`EXPLAIN (${flags}) ${analysis.statement}`, [...params]);
      // On an error the connection is destroyed, and the prepared statement with it.
      await run(`PREPARE gatehouse_explain AS ${analysis.statement}`, []);
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const nulls = new Array<string>(analysis.parameterCount).fill('NULL').join(', ');
      const result = await run(`EXPLAIN (${flags}) EXECUTE gatehouse_explain(${nulls})`, []);
      await client.query('DEALLOCATE gatehouse_explain');
      return result;
    });
    return { plan, analysis };
  }
}
