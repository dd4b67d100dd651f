import { LRUCache } from 'lru-cache';
import type { PoolClient, QueryConfig } from 'pg';
import { traceUpstream } from '@gatehouse/core';
import { translateError } from './database.js';
import type { Catalog, DbCall, MaskedSet, PostgresDatabase } from './database.js';
import type { PostgresConfig } from '../config.js';
import { CappedRows, NO_MASK } from './execute.js';
import type { MaskPlan, QueryOutput } from './execute.js';
import { ParameterTypes } from './read-only-statement.js';
import { frameLimit } from './frame-guard.js';
import { checkSizes } from './sizes.js';
import type { QueryParam } from './read-only-statement.js';
import { relationKey, resolveStatement, viewColumnsMasked } from './resolve.js';
import type { ReadRelation, RelationInfo, Resolution, ResolverCatalog } from './resolve.js';
import { SqlRefusedError, analyzeSql } from './guard.js';
import type { SqlAnalysis } from './guard.js';
import { checkCatalog, checkStatic, reachedBy } from './policy.js';
import type { Reached, SqlPolicyOptions } from './policy.js';

export type { QueryParam } from './read-only-statement.js';

/** How many rounds of catalog lookups resolution may ask for (views of views of views…). */
const LOOKUP_ROUNDS = 8;

/** What the catalog stage decided of one statement in one call. */
interface Verdict {
  readonly resolution: Resolution;
  /** Whether the statement is proven unable to leave session state (the check is skipped). */
  readonly sessionSafe: boolean;
  /** Which answer columns to mask. */
  readonly mask: MaskPlan;
}

/**
 * A resolution, what it read from the catalog (it holds while those are unchanged), and the
 * answer masking that follows from it.
 */
interface Resolved {
  readonly masked: MaskedSet;
  readonly reads: ReadonlyArray<readonly [string, string, RelationInfo | null]>;
  readonly resolution: Resolution;
  readonly mask: MaskPlan;
}

/** Whether any of the types $1 is, or is built on, a type whose input looks a name up. */
const LOOKUP_TYPES = `WITH RECURSIVE tclos(oid) AS (
  SELECT unnest($1::oid[])
  UNION
  SELECT e.x FROM tclos c JOIN pg_catalog.pg_type t ON t.oid = c.oid, LATERAL (
    SELECT t.typbasetype UNION ALL SELECT t.typelem
    UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a
      WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid
  ) e(x) WHERE e.x <> 0
)
SELECT coalesce(bool_or(oid = ANY ('{regclass,regtype,regproc,regprocedure,regoper,regoperator,regnamespace,regrole,regconfig,regdictionary,regcollation}'::pg_catalog.regtype[]::oid[])), false) AS lookup
FROM tclos`;

/** Plan keys that carry the planner's estimates. */
const ESTIMATES = ['Startup Cost', 'Total Cost', 'Plan Rows', 'Plan Width'];
/** Plan keys only EXPLAIN VERBOSE shows (the tool always asks for VERBOSE, to see schemas). */
const VERBOSE_ONLY = ['Output', 'Schema', 'Query Identifier'];

/**
 * The one path every SQL text takes: parse and shape check, static rules, then — inside the
 * read-only transaction — name resolution with the masking, schema and catalog rules on what
 * each reference resolves to, and capped execution. Tools, resources and prompts all go
 * through it.
 */
export class SqlService {
  readonly db: PostgresDatabase;
  readonly config: PostgresConfig;
  readonly policy: SqlPolicyOptions;
  /** Where unqualified relation names are looked up: pg_catalog first, as PostgreSQL does. */
  readonly #searchPath: readonly string[];
  readonly #allowed: ReadonlySet<string>;

  constructor(db: PostgresDatabase, config: PostgresConfig) {
    this.db = db;
    this.config = config;
    this.policy = {
      schemas: db.schemas,
      allowFunctions: config.POSTGRES_ALLOW_FUNCTIONS,
      maxValueBytes: frameLimit(config.POSTGRES_MAX_BYTES),
      refuseRoleSwitches: db.roleMap !== undefined,
    };
    this.#searchPath = db.schemas.includes('pg_catalog')
      ? db.schemas
      : ['pg_catalog', ...db.schemas];
    this.#allowed = new Set(db.schemas);
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

  /** Each analysed statement's last resolution (kept as long as the analysis is cached). */
  readonly #resolved = new WeakMap<SqlAnalysis, Resolved>();

  /**
   * When each analysed statement's parameter types were last found not to look names up, per
   * role (what a name resolves to depends on the schemas the role may use).
   */
  readonly #parametersChecked = new WeakMap<SqlAnalysis, Map<string, number>>();

  /**
   * Refuses a statement whose parameters PostgreSQL would look up as catalog names when bound:
   * a parameter takes the type its place asks for (`'employees'::regclass = $1`, `pg_typeof(x) =
   * $1`, a function's regconfig argument), and a text bound to a reg* type — or to a domain,
   * array or row type built on one — is looked up by name, so whether it exists comes back. The
   * types are PostgreSQL's own (Parse and Describe, nothing bound), cached like the catalog.
   */
  private async checkParameters(
    analysis: SqlAnalysis,
    client: PoolClient,
    role: string | undefined,
    describe: (sql: string) => Promise<readonly number[]>,
  ): Promise<void> {
    if (analysis.parameterCount === 0) return;
    const checked = this.#parametersChecked.get(analysis) ?? new Map<string, number>();
    const at = checked.get(role ?? '');
    if (at !== undefined && Date.now() - at < this.config.POSTGRES_CATALOG_TTL_MS) return;
    const types = await describe(analysis.statement);
    const found = await client.query<{ lookup: boolean }>({
      name: 'gatehouse_lookup_types',
      text: LOOKUP_TYPES,
      values: [types],
    });
    if (found.rows[0]?.lookup === true) {
      throw new SqlRefusedError(
        'name_lookup',
        'a parameter ($n) stands where PostgreSQL reads a catalog name (a regclass, regtype, regconfig… or a type built on one), so its value would be looked up by name when bound. Write the name as a constant in the SQL instead.',
      );
    }
    checked.set(role ?? '', Date.now());
    this.#parametersChecked.set(analysis, checked);
  }

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

  /** The catalog stage: resolution and its rules, the function rules, the masking plan. */
  async verdict(
    analysis: SqlAnalysis,
    client: PoolClient,
    role: string | undefined,
  ): Promise<Verdict> {
    const catalog = this.db.catalog(client, role);
    const reached = await reachedBy(analysis, this.policy, catalog);
    const { resolution, mask } = await this.resolve(analysis, catalog, reached);
    // The sizes again, now that the tables' rows are known (as the planner estimates them).
    checkSizes(analysis.select, this.policy.maxValueBytes!, (schema, name) => {
      for (const s of schema === undefined ? this.#searchPath : [schema]) {
        const info = catalog.relation(s, name);
        if (info !== undefined && info !== null) return info.rowEstimate;
      }
      return undefined;
    });
    const { sessionSafe } = await checkCatalog(
      reached,
      resolution,
      this.policy,
      analysis.typedValues,
    );
    return { resolution, sessionSafe, mask };
  }

  /** What the catalog sees for name resolution, recording what it was asked. */
  #input(
    catalog: Catalog,
    masked: MaskedSet,
    reached?: Reached,
    reads?: Array<[string, string, RelationInfo | null]>,
  ): ResolverCatalog {
    const functions = new Set(reached?.functions.map((f) => f.name));
    return {
      // Without the catalog's list (the schema tools), any name may be a function.
      isFunction: (name) => reached === undefined || functions.has(name),
      relation: (schema, name) => {
        const info = catalog.relation(schema, name);
        if (info !== undefined) reads?.push([schema, name, info]);
        return info;
      },
      masked: (oid, attnum) => masked.byOrigin.get(`${oid}:${attnum}`),
      searchPath: this.#searchPath,
      allowed: this.#allowed,
      database: this.db.database,
    };
  }

  /**
   * Resolves the statement, looking up what it needs; reused, with its answer masking, while
   * nothing it read changed.
   */
  private async resolve(
    analysis: SqlAnalysis,
    catalog: Catalog,
    reached: Reached,
  ): Promise<Resolved> {
    let masked = await catalog.maskedColumns();
    const known = this.#resolved.get(analysis);
    if (
      known !== undefined &&
      known.masked === masked &&
      known.reads.every(([schema, name, info]) => catalog.relation(schema, name) === info)
    ) {
      return known;
    }
    await catalog.loadRelations(
      analysis.relations.flatMap((r) =>
        r.schema === undefined
          ? this.#searchPath.map((s) => relationKey(s, r.name))
          : [relationKey(r.schema, r.name)],
      ),
    );
    let refreshed = false;
    for (let round = 1; ; round++) {
      const reads: Array<[string, string, RelationInfo | null]> = [];
      const resolution = resolveStatement(
        analysis.select,
        this.#input(catalog, masked, reached, reads),
      );
      if (round === LOOKUP_ROUNDS) {
        throw new SqlRefusedError(
          'unresolved_reference',
          `the statement's views are nested more than ${LOOKUP_ROUNDS} deep; query the tables they read instead.`,
        );
      }
      if (resolution.missing.length > 0) {
        await catalog.loadRelations(resolution.missing);
        continue;
      }
      // A reference to nothing known, beside a masked column: the cached catalog may be older
      // than the database (a column added since). Looked up afresh, a reference that still
      // denotes nothing is one PostgreSQL refuses with its own error.
      if (resolution.unresolved.length > 0 && resolution.maskedInReach && !refreshed) {
        refreshed = true;
        await catalog.loadRelations(
          reads.map(([schema, name]) => relationKey(schema, name)),
          { fresh: true },
        );
        masked = await catalog.maskedColumns({ fresh: true });
        continue;
      }
      const resolved = { masked, reads, resolution, mask: maskPlan(resolution, masked) };
      this.#resolved.set(analysis, resolved);
      return resolved;
    }
  }

  /**
   * For the schema tools: which columns of a table or view come back masked — its own masked
   * columns, and a view's columns that pass a masked value through or compute from one.
   */
  async maskedColumnsOf(
    client: PoolClient,
    role: string | undefined,
    schema: string,
    name: string,
  ): Promise<(column: string) => boolean> {
    const catalog = this.db.catalog(client, role);
    const masked = await catalog.maskedColumns();
    await catalog.loadRelations([relationKey(schema, name)]);
    const info = catalog.relation(schema, name);
    if (info === null || info === undefined) return () => false;
    let attnums: ReadonlySet<number>;
    if (info.kind === 'v' || info.kind === 'm') {
      for (let round = 1; ; round++) {
        const found = viewColumnsMasked(info, this.#input(catalog, masked));
        if (found.missing.length === 0 || round === LOOKUP_ROUNDS) {
          attnums = found.masked;
          break;
        }
        await catalog.loadRelations(found.missing);
      }
    } else {
      attnums = new Set(
        info.columns
          .filter((c) => masked.byOrigin.has(`${info.oid}:${c.attnum}`))
          .map((c) => c.attnum),
      );
    }
    const names = new Set(info.columns.filter((c) => attnums.has(c.attnum)).map((c) => c.name));
    return (column) => names.has(column);
  }

  /** Runs a SELECT (or an EXPLAIN of one) under every layer, returning the capped result. */
  async query(
    bounds: DbCall,
    sql: string,
    params: readonly QueryParam[],
    maxRows: number,
    maxBytes: number = this.config.POSTGRES_MAX_BYTES,
  ): Promise<QueryOutput & { durationMs: number }> {
    const analysis = await this.check(sql);
    const started = performance.now();
    // One CLIENT span for the call's connection when tracing is on: the database, no SQL.
    const output = await traceUpstream(
      'postgresql transaction',
      this.db.spanAttributes,
      async () => {
        for (let attempt = 1; ; attempt++) {
          const checkout = await this.db.checkout(bounds);
          try {
            const verdict = await this.verdict(analysis, checkout.client, checkout.role);
            if (analysis.kind === 'explain') {
              this.explainable(verdict.resolution, analysis.analyze, true);
            }
            await this.checkParameters(
              analysis,
              checkout.client,
              checkout.role,
              checkout.parameterTypes,
            );
            return await checkout.run({
              sql: analysis.statement,
              params,
              sessionCheck: !verdict.sessionSafe,
              rows: new CappedRows(
                { maxRows, maxBytes },
                // An EXPLAIN answers with the plan's lines, not the query's columns.
                analysis.kind === 'explain' ? NO_MASK : verdict.mask,
              ),
            });
          } catch (error) {
            if (checkout.abandon(error) && attempt === 1) continue;
            throw translateError(error, bounds.signal);
          }
        }
      },
    );
    return { ...output, durationMs: Math.round((performance.now() - started) * 10) / 10 };
  }

  /**
   * Refuses an EXPLAIN whose plan would carry what the answers may not: planner estimates
   * computed from masked values (through postgres_query, whose EXPLAIN output is not rewritten;
   * with ANALYZE, sizes, memory and buffers too), or objects outside the allowed schemas that a
   * view, a partition or an inheritance child brings in.
   */
  private explainable(resolution: Resolution, analyze: boolean, viaQuery: boolean): void {
    if (resolution.touchesMasked && (viaQuery || analyze)) {
      throw new SqlRefusedError(
        'masked_column',
        viaQuery
          ? 'the statement reads a masked column, and an EXPLAIN of it shows planner estimates (rows, widths, costs) computed from the masked values. Use postgres_explain, which shows such a plan without them.'
          : 'the statement reads a masked column, and EXPLAIN ANALYZE reports sizes, memory and buffers that depend on its values. Explain it without analyze (the plan comes without estimates).',
      );
    }
    for (const { info, through } of resolution.relations) {
      const outside = [info.schema, ...info.descendantSchemas].find((s) => !this.#allowed.has(s));
      if (outside === undefined) continue;
      const system =
        outside === 'pg_catalog' || outside === 'information_schema' || outside.startsWith('pg_');
      // Named only as far as the caller may see: the view the statement reads, or the table it
      // wrote whose partitions or children lie elsewhere — never the hidden relation itself.
      const what =
        through !== undefined
          ? `a relation outside the allowed schemas, read through the view ${through}`
          : outside === info.schema
            ? 'a relation outside the allowed schemas'
            : `partitions or children of ${info.schema}.${info.name} outside the allowed schemas`;
      throw new SqlRefusedError(
        system ? 'system_catalog' : 'schema_not_allowed',
        `its plan would show ${what} (${this.db.schemas.join(', ')}), with the planner's estimates of its size.`,
      );
    }
  }

  /** EXPLAIN (FORMAT JSON) of a SELECT; ANALYZE only when configured. */
  async explain(
    bounds: DbCall,
    sql: string,
    params: readonly QueryParam[],
    options: { analyze: boolean; verbose: boolean },
  ): Promise<{ plan: unknown; estimates: boolean; relations: readonly ReadRelation[] }> {
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
    // Always VERBOSE: the plan then names each relation's schema, which is checked below.
    const flags = [
      'FORMAT JSON',
      'VERBOSE',
      ...(options.analyze ? ['ANALYZE', 'BUFFERS'] : []),
    ].join(', ');
    const { plan, resolution } = await this.db.transaction(bounds, async (client, role) => {
      const verdict = await this.verdict(analysis, client, role);
      this.explainable(verdict.resolution, options.analyze, false);
      if (!generic) {
        await this.checkParameters(analysis, client, role, (text) => {
          const described = new ParameterTypes(text);
          client.query(described);
          return described.done;
        });
      }
      // queryMode 'extended': even without parameters, the extended protocol (one statement).
      const run = async (text: string, values: unknown[]) =>
        (
          await client.query<{ 'QUERY PLAN': unknown }>({
            text,
            values,
            queryMode: 'extended',
          } as QueryConfig)
        ).rows[0]?.['QUERY PLAN'];
      if (!generic) {
        return {
          plan: await run(`EXPLAIN (${flags}) ${analysis.statement}`, [...params]),
          resolution: verdict.resolution,
        };
      }
      // On an error the connection is destroyed, and the prepared statement with it.
      await run(`PREPARE gatehouse_explain AS ${analysis.statement}`, []);
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const nulls = new Array<string>(analysis.parameterCount).fill('NULL').join(', ');
      const result = await run(`EXPLAIN (${flags}) EXECUTE gatehouse_explain(${nulls})`, []);
      await client.query('DEALLOCATE gatehouse_explain');
      return { plan: result, resolution: verdict.resolution };
    });
    const estimates = !resolution.touchesMasked;
    return {
      plan: this.shownPlan(plan, { estimates, verbose: options.verbose }),
      estimates,
      relations: resolution.relations.filter((r) => r.through === undefined),
    };
  }

  /**
   * The plan as shown: every relation it scans must be in an allowed schema (the last check,
   * on what PostgreSQL planned, whatever resolution found: a partition in another schema shows
   * here); estimates are removed from a plan of masked values; VERBOSE-only keys unless asked.
   */
  private shownPlan(plan: unknown, options: { estimates: boolean; verbose: boolean }): unknown {
    const walk = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(walk);
      if (typeof value !== 'object' || value === null) return value;
      const node = value as Record<string, unknown>;
      if (
        typeof node['Relation Name'] === 'string' &&
        typeof node.Schema === 'string' &&
        !this.#allowed.has(node.Schema)
      ) {
        throw new SqlRefusedError(
          'schema_not_allowed',
          `its plan scans a relation outside the allowed schemas (${this.db.schemas.join(', ')}).`,
        );
      }
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(node)) {
        if (!options.estimates && ESTIMATES.includes(key)) continue;
        if (!options.verbose && VERBOSE_ONLY.includes(key)) continue;
        out[key] = walk(inner);
      }
      return out;
    };
    return walk(plan);
  }
}

/** Which answer columns to mask, from the resolution and the masked columns' origins. */
function maskPlan(resolution: Resolution, masked: MaskedSet): MaskPlan {
  if (masked.columns.length === 0 && resolution.maskedOrigins.size === 0) return NO_MASK;
  const positions = new Set<number>();
  resolution.outputs.forEach((label, i) => {
    if (label !== null) positions.add(i);
  });
  const read = new Set(resolution.relations.map((r) => r.info.oid));
  return {
    positions,
    origins: new Set([...masked.byOrigin.keys(), ...resolution.maskedOrigins]),
    names: new Set([
      ...masked.columns.filter((m) => read.has(m.tableOid)).map((m) => m.column),
      ...resolution.maskedNames,
    ]),
    width:
      resolution.touchesMasked && resolution.outputsExact ? resolution.outputs.length : undefined,
  };
}
