import { PolicyError, ToolError, UpstreamError, traceUpstream } from '@gatehouse/core';
import type { Logger, ReadyResult } from '@gatehouse/core';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import type { PoolClient } from 'pg';
import type { PostgresConfig } from '../config.js';
import type { CappedRows, QueryOutput } from './execute.js';
import { parse } from 'libpg-query';
import type { SelectStmt } from 'libpg-query';
import { matches, parseMaskPatterns } from './masking.js';
import type { MaskPattern } from './masking.js';
import { relationKey } from './resolve.js';
import type { MaskedColumn, RelationInfo } from './resolve.js';
import { checkRole, describeFindings } from './role-check.js';
import { frameLimit, guardFrames } from './frame-guard.js';
import { ReadOnlyStatement, SESSION_CHECK } from './read-only-statement.js';
import type { QueryParam } from './read-only-statement.js';
import type { RoleReport } from './role-check.js';
import type { CatalogLookup, Reached, ReachedFunction } from './policy.js';
import type { CallBounds } from '@gatehouse/core';

/** What a call passes down to every request (the core's; ADR 0018). */
export type { CallBounds } from '@gatehouse/core';

/** The state of the startup role check. */
type Verification =
  | { state: 'pending' }
  | { state: 'passed'; report: RoleReport; overridden: boolean }
  | { state: 'refused'; message: string };

/** Why a role check refused, as thrown at startup (the process exits with code 2). */
export class PrivilegedRoleError extends ToolError {
  readonly report: RoleReport;
  constructor(report: RoleReport) {
    super(
      `Refusing to serve: ${describeFindings(report)}. Connect as a read-only role (servers/postgres/README.md, "The read-only role"), or set POSTGRES_ALLOW_PRIVILEGED_ROLE=true to start anyway.`,
      { code: 'privileged_role' },
    );
    this.report = report;
  }
}

// Error codes of the network layer and of PostgreSQL (class 08, 53, 57P0x) that mean "the
// database is not there right now", not "your query is wrong".
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended|the database system is (?:starting up|shutting down|in recovery mode)/i;

/**
 * Errors a statement causes by what it asks of the server — memory for the values it builds,
 * temporary files for its sorts: PostgreSQL answers them to that statement, and they are the
 * request's, not an outage (the statement would fail again; others are not affected).
 */
const STATEMENT_RESOURCE_CODES = new Set(['53200', '53100']);

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (error instanceof pg.DatabaseError && STATEMENT_RESOURCE_CODES.has(code as string)) {
    return false;
  }
  if (typeof code === 'string') {
    if (UNAVAILABLE_NODE_CODES.has(code)) return true;
    // Class 08 is the connection, except 08P01 (a protocol violation: our request was wrong).
    if (/^(?:08(?!P01)|53|57P0[1-4])/.test(code)) return true;
  }
  return UNAVAILABLE_MESSAGES.test(error.message);
}

/**
 * Turns a failure into what the model sees. Query mistakes keep PostgreSQL's message (with the
 * position and hint); an outage becomes a retryable 503 without detail; an abort becomes the
 * core's typed reason (deadline, cancellation, shutdown).
 */
export function translateError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted === true) return signal.reason as unknown;
  if (error instanceof ToolError || error instanceof UpstreamError) return error;
  if (isUnavailable(error)) {
    return new UpstreamError({
      service: 'PostgreSQL',
      status: 503,
      message: 'PostgreSQL is unreachable',
      cause: error,
    });
  }
  if (error instanceof pg.DatabaseError) {
    const code = error.code ?? '';
    const where = error.position === undefined ? '' : ` (at character ${error.position})`;
    const hint = error.hint === undefined ? '' : ` Hint: ${error.hint}`;
    if (code === '57014') {
      return new ToolError(
        /statement timeout/i.test(error.message)
          ? 'The query ran past the statement timeout and PostgreSQL cancelled it. Narrow it (filters, LIMIT, aggregates) or check its plan with postgres_explain.'
          : 'PostgreSQL cancelled the query.',
        { code: 'statement_timeout', cause: error },
      );
    }
    if (STATEMENT_RESOURCE_CODES.has(code) || code.startsWith('54')) {
      return new ToolError(
        `PostgreSQL could not run this statement (${code}): ${error.message}. It asks more of the database server than it allows: build smaller values (left(x, 1000)), fewer rows or columns, or aggregate without building the values (count, sum, length).`,
        { code: 'statement_too_large', cause: error },
      );
    }
    if (code === '55P03') {
      return new ToolError(
        'The query waited too long for a lock held by another session (lock_timeout) and was cancelled. Try again shortly.',
        { code: 'lock_timeout', cause: error },
      );
    }
    if (code === '25006') {
      return new ToolError(
        `PostgreSQL refused a write inside the read-only transaction: ${error.message}. This server only reads.`,
        { code: 'read_only', cause: error },
      );
    }
    if (code === '08P01' && /bind message supplies/.test(error.message)) {
      return new ToolError(
        `The SQL and its params do not match: ${error.message}. Pass one value in params for each $n.`,
        { code: 'query_error', cause: error },
      );
    }
    // Class 28 (invalid authorization: a wrong password, a role that may not log in, no
    // pg_hba.conf entry) and 3D000 (no such database): what POSTGRES_URL says is wrong, not the call.
    if (code.startsWith('28') || code === '3D000') {
      return new ToolError(
        `PostgreSQL refused the server's login (${code}): ${error.message}. The operator must fix POSTGRES_URL.`,
        { code: 'login_refused', cause: error },
      );
    }
    if (code === '42501') {
      return new ToolError(`PostgreSQL denied access: ${error.message}.${hint}`, {
        code: 'permission_denied',
        cause: error,
      });
    }
    return new ToolError(`PostgreSQL error ${code}: ${error.message}${where}.${hint}`, {
      code: 'query_error',
      cause: error,
    });
  }
  return error;
}

function waitOrAbort<T>(promise: Promise<T>, signal: AbortSignal, onLate: (value: T) => void) {
  if (signal.aborted) {
    promise.then(onLate, () => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      promise.then(onLate, () => undefined);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) onLate(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** The database name of a connection URL (libpq's default: the user name). */
export function databaseName(url: string): string {
  const parsed = new URL(url);
  return (
    decodeURIComponent(parsed.pathname.replace(/^\//, '')) ||
    decodeURIComponent(parsed.username) ||
    'postgres'
  );
}

/** Entries of the reached-functions cache (one per distinct set of names in statements). */
const CATALOG_CACHE_ENTRIES = 1_000;

/** The masked columns of the database, by origin (`tableOid:attnum`) too. */
export interface MaskedSet {
  readonly columns: readonly MaskedColumn[];
  readonly byOrigin: ReadonlyMap<string, MaskedColumn>;
}

const NO_MASKS: MaskedSet = { columns: [], byOrigin: new Map() };

/** A relation the catalog does not have (cached like one that exists). */
const NO_RELATION = Symbol('no relation');

/** The catalog lookups of one call: the function rules' and name resolution's. */
export interface Catalog extends CatalogLookup {
  /** The masked columns (the same object while it is cached; `fresh`: looked up now). */
  maskedColumns(options?: { fresh?: boolean }): Promise<MaskedSet>;
  /** Looks up the relations (keys of {@link relationKey}) not known yet (`fresh`: all of them). */
  loadRelations(keys: readonly string[], options?: { fresh?: boolean }): Promise<void>;
  /** A relation looked up: its description, null when none, undefined when not looked up. */
  relation(schema: string, name: string): RelationInfo | null | undefined;
}

/** Schema and name arrays of {@link relationKey} keys. */
function splitNames(keys: readonly string[]): [string[], string[]] {
  const parts = keys.map((k) => k.split('\0'));
  return [parts.map((p) => p[0]!), parts.map((p) => p[1]!)];
}

/** A view's deparsed definition as a parse tree (undefined when it is not one SELECT). */
async function parseDefinition(text: string): Promise<SelectStmt | undefined> {
  try {
    const stmt = (await parse(text)).stmts?.[0]?.stmt as { SelectStmt?: SelectStmt } | undefined;
    return stmt?.SelectStmt;
  } catch {
    return undefined;
  }
}

/**
 * Every function PostgreSQL may run for a statement, from the names it uses (as schema and name
 * arrays: functions $1/$2, operators $3/$4, relations $5/$6, types $7/$8, names a column
 * reference may call in functional notation $9/$10). A recursive walk
 * over the catalog: a called function's result type; an operator's functions and result type;
 * an aggregate's support functions (its own pg_proc row says nothing of them); a relation's
 * column types and what its view rules, row-security policies and virtual generated columns
 * depend on; a type's base, element, attribute and range subtypes, its input/output functions,
 * its domain checks and default. Then every cast whose source and target are both among the
 * types reached (explicit casts name their target; implicit ones convert between types already
 * there). Built-in pg_catalog types and operators are not expanded: only a superuser can change
 * what they run, and none of their support functions is volatile.
 */
const REACHED_FUNCTIONS = `WITH RECURSIVE obj(kind, oid, via) AS (
  SELECT 'f'::text, p.oid, 'call'::text
    FROM unnest($1::text[], $2::text[]) w(schema, name)
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.schema
    JOIN pg_catalog.pg_proc p ON p.proname = w.name AND p.pronamespace = n.oid
  UNION
  SELECT 'f'::text, p.oid, 'column notation'::text
    FROM unnest($9::text[], $10::text[]) w(schema, name)
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.schema
    JOIN pg_catalog.pg_proc p ON p.proname = w.name AND p.pronamespace = n.oid
  UNION
  SELECT 'o', o.oid, 'operator'
    FROM unnest($3::text[], $4::text[]) w(schema, name)
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.schema
    JOIN pg_catalog.pg_operator o ON o.oprname = w.name AND o.oprnamespace = n.oid
  UNION
  SELECT 'r', c.oid, 'relation'
    FROM unnest($5::text[], $6::text[]) w(schema, name)
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.schema
    JOIN pg_catalog.pg_class c ON c.relname = w.name AND c.relnamespace = n.oid
  UNION
  SELECT 't', t.oid, 'type'
    FROM unnest($7::text[], $8::text[]) w(schema, name)
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.schema
    JOIN pg_catalog.pg_type t ON t.typname = w.name AND t.typnamespace = n.oid
  UNION
  SELECT e.kind, e.oid, e.via FROM obj, LATERAL (
    SELECT 'g'::text, x, 'operator' FROM pg_catalog.pg_operator o, unnest(ARRAY[o.oprcode::oid, o.oprrest::oid, o.oprjoin::oid]) x
      WHERE obj.kind = 'o' AND o.oid = obj.oid AND o.oprnamespace <> 'pg_catalog'::regnamespace
    UNION ALL SELECT 't', o.oprresult, 'operator' FROM pg_catalog.pg_operator o WHERE obj.kind = 'o' AND o.oid = obj.oid
    UNION ALL SELECT 'g', x, 'aggregate support' FROM pg_catalog.pg_aggregate a,
      unnest(ARRAY[a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn, a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn]::oid[]) x
      WHERE obj.kind IN ('f', 'g') AND a.aggfnoid = obj.oid
    UNION ALL SELECT 't', p.prorettype, 'result' FROM pg_catalog.pg_proc p WHERE obj.kind = 'f' AND p.oid = obj.oid
    UNION ALL SELECT 't', a.atttypid, 'column' FROM pg_catalog.pg_attribute a WHERE obj.kind = 'r' AND a.attrelid = obj.oid AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL SELECT CASE d.refclassid WHEN 'pg_catalog.pg_proc'::regclass THEN 'f' WHEN 'pg_catalog.pg_operator'::regclass THEN 'o' WHEN 'pg_catalog.pg_type'::regclass THEN 't' ELSE 'r' END,
        d.refobjid, 'view'
      FROM pg_catalog.pg_rewrite w JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = w.oid
      WHERE obj.kind = 'r' AND w.ev_class = obj.oid AND d.refobjid <> obj.oid
        AND d.refclassid IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_operator'::regclass, 'pg_catalog.pg_type'::regclass, 'pg_catalog.pg_class'::regclass)
    UNION ALL SELECT CASE d.refclassid WHEN 'pg_catalog.pg_proc'::regclass THEN 'f' WHEN 'pg_catalog.pg_operator'::regclass THEN 'o' ELSE 't' END,
        d.refobjid, 'row security policy'
      FROM pg_catalog.pg_policy pol JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_policy'::regclass AND d.objid = pol.oid
      WHERE obj.kind = 'r' AND pol.polrelid = obj.oid AND d.refclassid IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_operator'::regclass, 'pg_catalog.pg_type'::regclass)
    UNION ALL SELECT CASE d.refclassid WHEN 'pg_catalog.pg_proc'::regclass THEN 'f' WHEN 'pg_catalog.pg_operator'::regclass THEN 'o' ELSE 't' END,
        d.refobjid, 'generated column'
      FROM pg_catalog.pg_attrdef ad JOIN pg_catalog.pg_attribute att ON att.attrelid = ad.adrelid AND att.attnum = ad.adnum AND att.attgenerated = 'v'
      JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::regclass AND d.objid = ad.oid
      WHERE obj.kind = 'r' AND ad.adrelid = obj.oid AND d.refclassid IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_operator'::regclass, 'pg_catalog.pg_type'::regclass)
    UNION ALL SELECT 't', x, 'type' FROM pg_catalog.pg_type t, unnest(ARRAY[t.typbasetype, t.typelem]) x WHERE obj.kind = 't' AND t.oid = obj.oid AND t.typnamespace <> 'pg_catalog'::regnamespace
    UNION ALL SELECT 't', a.atttypid, 'type' FROM pg_catalog.pg_type t JOIN pg_catalog.pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped WHERE obj.kind = 't' AND t.oid = obj.oid AND t.typnamespace <> 'pg_catalog'::regnamespace
    UNION ALL SELECT 't', r.rngsubtype, 'type' FROM pg_catalog.pg_range r WHERE obj.kind = 't' AND r.rngtypid = obj.oid
    UNION ALL SELECT 'g', x, 'type input/output' FROM pg_catalog.pg_type t, unnest(ARRAY[t.typinput, t.typoutput, t.typreceive, t.typsend, t.typmodin, t.typmodout, t.typsubscript]::oid[]) x WHERE obj.kind = 't' AND t.oid = obj.oid AND t.typnamespace <> 'pg_catalog'::regnamespace
    UNION ALL SELECT 'g', d.refobjid, 'domain constraint' FROM pg_catalog.pg_constraint c JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_constraint'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_catalog.pg_proc'::regclass WHERE obj.kind = 't' AND c.contypid = obj.oid
    UNION ALL SELECT 'g', d.refobjid, 'domain default' FROM pg_catalog.pg_depend d WHERE obj.kind = 't' AND d.classid = 'pg_catalog.pg_type'::regclass AND d.objid = obj.oid AND d.refclassid = 'pg_catalog.pg_proc'::regclass
  ) e(kind, oid, via) WHERE e.oid <> 0
),
-- Casts between two types the query involves: an explicit cast names its target, an implicit one
-- converts between types already there (a column's, a literal's target).
fn AS (
  SELECT oid, via FROM obj WHERE kind IN ('f', 'g')
  UNION ALL
  SELECT c.castfunc, 'cast' FROM pg_catalog.pg_cast c
   WHERE c.castfunc <> 0 AND c.castsource IN (SELECT oid FROM obj WHERE kind = 't')
     AND c.casttarget IN (SELECT oid FROM obj WHERE kind = 't')
),
-- The types the statement names, and every type each is built on (a domain's base, an array's
-- element, a row type's attributes, a range's subtype): a type built on a reg* type looks a text
-- up in the catalog when it reads one.
tclos(root, oid) AS (
  SELECT t.oid, t.oid
    FROM unnest($7::text[], $8::text[]) w(schema, name)
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.schema
    JOIN pg_catalog.pg_type t ON t.typname = w.name AND t.typnamespace = n.oid
  UNION
  SELECT c.root, e.x FROM tclos c JOIN pg_catalog.pg_type t ON t.oid = c.oid, LATERAL (
    SELECT t.typbasetype UNION ALL SELECT t.typelem
    UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a
      WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid
  ) e(x) WHERE e.x <> 0
),
-- A function is "column notation" only when nothing else reaches it (the rules then judge it
-- only if resolution finds it called).
fns AS (
  SELECT oid, coalesce(min(via) FILTER (WHERE via <> 'column notation'), 'column notation') AS via
  FROM fn GROUP BY oid
)
SELECT 'function' AS kind, n.nspname AS schema, p.proname AS name, p.oid::regprocedure::text AS signature,
       p.provolatile = 'v' AS volatile, p.prosecdef AS definer,
       (SELECT fns.via FROM fns WHERE fns.oid = p.oid) AS via, NULL::text AS definition
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE p.oid = ANY (ARRAY(SELECT oid FROM fns))
UNION ALL
-- The views read, with their definitions: what they call among the built-in functions is not in
-- pg_depend (built-ins are pinned), so the policy parses the definitions.
SELECT CASE c.relkind WHEN 'v' THEN 'view' ELSE 'foreign' END, n.nspname, c.relname, NULL, NULL, NULL,
       'view', CASE c.relkind WHEN 'v' THEN pg_catalog.pg_get_viewdef(c.oid) END
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v', 'f') AND c.oid = ANY (ARRAY(SELECT oid FROM obj WHERE kind = 'r'))
UNION ALL
-- The named types whose input looks names up (see tclos).
SELECT DISTINCT 'lookup type', n.nspname, t.typname, NULL::text, NULL::boolean, NULL::boolean, 'type', NULL::text
FROM tclos JOIN pg_catalog.pg_type t ON t.oid = tclos.root
JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE tclos.oid = ANY ('{regclass,regtype,regproc,regprocedure,regoper,regoperator,regnamespace,regrole,regconfig,regdictionary,regcollation}'::pg_catalog.regtype[]::oid[])`;

/**
 * What name resolution needs of relations (as schema and name arrays $1/$2), and of every
 * relation their view rules read, recursively: kind, columns in attnum order, a view's
 * definition (deparsed under the session's search_path, which is the allowed schemas: names
 * outside it come back qualified), the columns its row-security policies read, the columns of
 * its own partition key and of its ancestors' ('' for a key expression), the schemas of its
 * inheritance children and partitions, and the planner's estimate of its rows (when analysed).
 */
const RELATIONS = `WITH RECURSIVE wanted(oid) AS (
  SELECT c.oid
    FROM unnest($1::text[], $2::text[]) w(schema, name)
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.schema
    JOIN pg_catalog.pg_class c ON c.relname = w.name AND c.relnamespace = n.oid
  UNION
  SELECT d.refobjid
    FROM wanted
    JOIN pg_catalog.pg_rewrite r ON r.ev_class = wanted.oid
    JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
     AND d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid <> wanted.oid
)
SELECT c.oid::text AS oid, n.nspname AS schema, c.relname AS name, c.relkind::text AS kind,
  ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS column_names,
  ARRAY(SELECT a.attnum::int FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS column_numbers,
  CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid) END AS definition,
  CASE WHEN c.relrowsecurity THEN ARRAY(
    SELECT DISTINCT d.refobjsubid::int FROM pg_catalog.pg_policy p
      JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_policy'::regclass AND d.objid = p.oid
       AND d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid = c.oid AND d.refobjsubid > 0
     WHERE p.polrelid = c.oid) ELSE '{}'::int[] END AS policy_columns,
  ARRAY(SELECT coalesce((SELECT a.attname::text FROM pg_catalog.pg_attribute a
                          WHERE a.attrelid = c.oid AND a.attnum = k.attnum), '')
          FROM pg_catalog.pg_partitioned_table pt, unnest(pt.partattrs::int2[]) k(attnum)
         WHERE pt.partrelid = c.oid) AS partition_key,
  CASE WHEN c.relispartition THEN ARRAY(
    SELECT coalesce((SELECT a.attname::text FROM pg_catalog.pg_attribute a
                      WHERE a.attrelid = pt.partrelid AND a.attnum = k.attnum), '')
      FROM pg_catalog.pg_partition_ancestors(c.oid) anc(relid)
      JOIN pg_catalog.pg_partitioned_table pt ON pt.partrelid = anc.relid AND anc.relid <> c.oid,
      unnest(pt.partattrs::int2[]) k(attnum)) ELSE '{}'::text[] END AS ancestor_keys,
  ARRAY(WITH RECURSIVE below(relid) AS (
          SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent = c.oid
          UNION SELECT i.inhrelid FROM below JOIN pg_catalog.pg_inherits i ON i.inhparent = below.relid)
        SELECT DISTINCT dn.nspname::text FROM below
          JOIN pg_catalog.pg_class dc ON dc.oid = below.relid
          JOIN pg_catalog.pg_namespace dn ON dn.oid = dc.relnamespace) AS descendant_schemas,
  CASE WHEN c.relkind IN ('r', 'm', 'p') AND c.reltuples >= 0 THEN c.reltuples::float8 END AS row_estimate
FROM wanted JOIN pg_catalog.pg_class c ON c.oid = wanted.oid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace`;

/**
 * The masked columns: every column a POSTGRES_MASK_COLUMNS pattern matches (patterns as schema,
 * table and column arrays $1/$2/$3, `*` for any), in any schema but the system ones (a view may
 * read a hidden schema), then, recursively: by column name, every inheritance child and parent of
 * a table with a masked column (a partition holds its partitioned table's rows, a parent shows its
 * children's); and every generated column its table computes from a masked column (STORED or
 * VIRTUAL: `upper(national_id)` is the masked value, written otherwise). `generated` is the
 * generated column's kind ('s' stored, 'v' virtual, '' for a column that holds its own values),
 * `source` the masked column it is computed from.
 */
const MASKED_COLUMNS = `WITH RECURSIVE matched(relid, attname, source) AS (
  SELECT c.oid, a.attname, NULL::pg_catalog.name
    FROM unnest($1::text[], $2::text[], $3::text[]) p(schema, tab, col)
    JOIN pg_catalog.pg_attribute a ON a.attname = p.col AND a.attnum > 0 AND NOT a.attisdropped
    JOIN pg_catalog.pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
     AND (p.tab = '*' OR c.relname = p.tab)
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     AND (p.schema = '*' OR n.nspname = p.schema)
     AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'
  UNION
  SELECT x.relid, x.attname, x.source FROM matched m, LATERAL (
    SELECT CASE WHEN i.inhparent = m.relid THEN i.inhrelid ELSE i.inhparent END, m.attname, m.source
      FROM pg_catalog.pg_inherits i WHERE i.inhparent = m.relid OR i.inhrelid = m.relid
    UNION ALL
    SELECT g.attrelid, g.attname, coalesce(m.source, m.attname)
      FROM pg_catalog.pg_attribute ma
      JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_class'::regclass
       AND d.refobjid = ma.attrelid AND d.refobjsubid = ma.attnum
       AND d.classid = 'pg_catalog.pg_attrdef'::regclass
      JOIN pg_catalog.pg_attrdef ad ON ad.oid = d.objid
      JOIN pg_catalog.pg_attribute g ON g.attrelid = ad.adrelid AND g.attnum = ad.adnum AND g.attgenerated <> ''
     WHERE ma.attrelid = m.relid AND ma.attname = m.attname
  ) x(relid, attname, source)
)
SELECT DISTINCT ON (c.oid, a.attnum)
       n.nspname AS schema, c.relname AS table, a.attname AS column, c.oid::text AS table_oid, a.attnum,
       a.attgenerated::text AS generated, m.source
FROM matched m
JOIN pg_catalog.pg_class c ON c.oid = m.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = m.relid AND a.attname = m.attname AND NOT a.attisdropped
ORDER BY c.oid, a.attnum, m.source NULLS FIRST`;

/** The span attributes of a database: system, host and port (never the credentials). */
function spanAttributesOf(connectionUrl: string): Record<string, string | number> {
  let url: URL | undefined;
  try {
    url = new URL(connectionUrl);
  } catch {
    url = undefined;
  }
  return {
    'db.system.name': 'postgresql',
    ...(url?.hostname ? { 'server.address': url.hostname } : {}),
    ...(url?.port ? { 'server.port': Number(url.port) } : {}),
  };
}

/** One statement for {@link PostgresDatabase.runStatement}. */
export interface StatementPlan {
  readonly sql: string;
  readonly params: readonly QueryParam[];
  /** Where its rows go, under their caps. */
  readonly rows: CappedRows;
  /**
   * Whether to check the session after ROLLBACK (default true). False only when the catalog
   * rules showed the statement runs nothing that can leave state behind.
   */
  readonly sessionCheck?: boolean;
}

/** Oid → type name of the built-in types, for column descriptions. */
type TypeNames = Map<number, string>;

/**
 * The upstream client: a `pg` pool whose every call runs in its own read-only transaction
 * (layer 3), behind the startup role check (layer 1), with catalog lookups cached for the
 * SQL policy (layer 2) and cancellation that reaches the backend.
 */
export class PostgresDatabase {
  readonly database: string;
  readonly schemas: readonly string[];
  private readonly pool: pg.Pool;
  private readonly config: PostgresConfig;
  private readonly logger: Logger;
  private readonly maskPatterns: readonly MaskPattern[];
  private verification: Verification = { state: 'pending' };
  private verifying: Promise<void> | undefined;
  private readonly typeNames: TypeNames = new Map();
  /**
   * What each set of names a statement uses reaches in the catalog. Keyed by names taken from
   * the model's SQL, so bounded: least recently used entries go, and none outlives the TTL.
   */
  private readonly reachedCache: LRUCache<string, Reached> | undefined;
  private maskCache: { set: MaskedSet; at: number } | undefined;
  /**
   * Relations by `schema.name` (absent ones as NO_RELATION), for name resolution: bounded like
   * the reached-functions cache, and for the same TTL.
   */
  private readonly relationCache: LRUCache<string, RelationInfo | typeof NO_RELATION> | undefined;
  private readonly beginPrefix: string;
  /** The allowed schemas as a set_config value, quoted where they need it. */
  private readonly searchPath: string;
  /** Span attributes of this database: system, host and port (never the credentials). */
  private readonly spanAttributes: Record<string, string | number>;

  private overrideListener: ((report: RoleReport) => void) | undefined;

  constructor(
    config: PostgresConfig,
    logger: Logger,
    schemas: readonly string[],
    options: { catalogCacheEntries?: number } = {},
  ) {
    this.config = config;
    this.logger = logger;
    this.schemas = schemas;
    this.maskPatterns = parseMaskPatterns(config.POSTGRES_MASK_COLUMNS);
    this.database = databaseName(config.POSTGRES_URL);
    // Two spellings of the same list: SQL needs every name quoted (a schema may be called
    // "user"), a set_config value is split by PostgreSQL itself and shows as written.
    const path = this.schemas.map((s) => pg.escapeIdentifier(s)).join(', ');
    this.searchPath = this.schemas
      .map((s) => (/^[a-z_][a-z0-9_]*$/.test(s) ? s : pg.escapeIdentifier(s)))
      .join(', ');
    this.pool = new pg.Pool({
      connectionString: config.POSTGRES_URL,
      max: config.POSTGRES_POOL_SIZE,
      connectionTimeoutMillis: config.POSTGRES_CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      application_name: 'gatehouse-postgres',
      // A session default as well as the per-call BEGIN READ ONLY: should anything ever run
      // outside our transaction, it is still read-only. The session's search_path is the
      // allowed schemas too, so that the catalog lookups deparse view definitions the way
      // name resolution reads them. (pg-pool awaits the returned promise.)
      onConnect: (client) => {
        // From its first message on, no message larger than the limit is buffered.
        guardFrames(client, frameLimit(config.POSTGRES_MAX_BYTES));
        return client.query(
          `SET SESSION default_transaction_read_only = on; SET SESSION statement_timeout = ${config.POSTGRES_STATEMENT_TIMEOUT_MS}; SET SESSION search_path = ${path}`,
        ) as unknown as void;
      },
    });
    // An idle connection that dies (database restart, network cut) must not crash the process;
    // the pool drops it and connects afresh on the next call.
    this.pool.on('error', (error) => {
      this.logger.warn({ err: error }, 'an idle PostgreSQL connection failed');
    });
    // A checked-out client whose connection drops (a restart, a network cut) emits 'error' too,
    // and pg-pool listens only while a client is idle: without this listener that is an
    // uncaught exception that ends the process. The call on it fails through its own query
    // (or the next one), is answered as unavailable, and the client is destroyed.
    this.pool.on('connect', (client) => {
      client.on('error', (error) => {
        this.logger.debug({ err: error }, 'a PostgreSQL connection in use failed');
      });
    });
    this.beginPrefix = `BEGIN READ ONLY; SET LOCAL search_path = ${path}; SET LOCAL lock_timeout = ${config.POSTGRES_LOCK_TIMEOUT_MS}`;
    this.spanAttributes = spanAttributesOf(config.POSTGRES_URL);
    this.reachedCache =
      config.POSTGRES_CATALOG_TTL_MS === 0
        ? undefined
        : new LRUCache({
            max: options.catalogCacheEntries ?? CATALOG_CACHE_ENTRIES,
            ttl: config.POSTGRES_CATALOG_TTL_MS,
          });
    this.relationCache =
      config.POSTGRES_CATALOG_TTL_MS === 0
        ? undefined
        : new LRUCache({
            max: (options.catalogCacheEntries ?? CATALOG_CACHE_ENTRIES) * 4,
            ttl: config.POSTGRES_CATALOG_TTL_MS,
          });
  }

  /**
   * Calls `listener` when the role check passes only because of POSTGRES_ALLOW_PRIVILEGED_ROLE
   * (now, if it already has, or later when the database first answers).
   */
  onOverride(listener: (report: RoleReport) => void): void {
    this.overrideListener = listener;
    if (this.verification.state === 'passed' && this.verification.overridden) {
      listener(this.verification.report);
    }
  }

  /**
   * Runs the startup role check (layer 1). Throws {@link PrivilegedRoleError} when the role can
   * write and no override is set; throws an unavailable error when the database cannot be
   * reached (the caller may start anyway: the check then runs before the first query).
   */
  async verify(): Promise<RoleReport> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw translateError(error);
    });
    let failed = false;
    try {
      const report = await checkRole(client);
      for (const warning of report.warnings) this.logger.warn({ role: report.role }, warning);
      if (report.findings.length > 0 && !this.config.POSTGRES_ALLOW_PRIVILEGED_ROLE) {
        const refusal = new PrivilegedRoleError(report);
        this.verification = { state: 'refused', message: refusal.message };
        throw refusal;
      }
      await this.loadTypeNames(client);
      await this.warnAboutSchemas(client);
      const overridden = report.findings.length > 0;
      this.verification = { state: 'passed', report, overridden };
      if (overridden) this.overrideListener?.(report);
      return report;
    } catch (error) {
      failed = !(error instanceof PrivilegedRoleError);
      throw error instanceof PrivilegedRoleError ? error : translateError(error);
    } finally {
      client.release(failed);
    }
  }

  /** A configured schema that does not exist (a typo?) or that the role cannot use: a warning. */
  private async warnAboutSchemas(client: pg.ClientBase): Promise<void> {
    const found = await client.query<{ schema: string; exists: boolean }>(
      `SELECT s AS schema, n.oid IS NOT NULL AS exists
       FROM unnest($1::text[]) s LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = s
       WHERE n.oid IS NULL OR NOT pg_catalog.has_schema_privilege(n.oid, 'USAGE')`,
      [this.schemas],
    );
    for (const { schema, exists } of found.rows) {
      this.logger.warn(
        { schema, database: this.database },
        exists
          ? `POSTGRES_SCHEMAS: the role has no USAGE on schema "${schema}": its tables cannot be read`
          : `POSTGRES_SCHEMAS: schema "${schema}" does not exist in database "${this.database}" (a typo?)`,
      );
    }
  }

  private async ensureVerified(): Promise<void> {
    if (this.verification.state === 'passed') return;
    if (this.verification.state === 'refused') {
      throw new PolicyError('role_check', this.verification.message, { code: 'privileged_role' });
    }
    this.verifying ??= this.verify()
      .then(() => undefined)
      .finally(() => {
        this.verifying = undefined;
      });
    await this.verifying;
  }

  private async loadTypeNames(client: pg.ClientBase): Promise<void> {
    const types = await client.query<{ oid: string; name: string }>(
      `SELECT t.oid::text AS oid, pg_catalog.format_type(t.oid, NULL) AS name
       FROM pg_catalog.pg_type t WHERE t.typnamespace = 'pg_catalog'::regnamespace`,
    );
    for (const t of types.rows) this.typeNames.set(Number(t.oid), t.name);
  }

  /**
   * Type names of column type oids (built-ins cached; others looked up once, on any pooled
   * connection: the call's own is released by then).
   */
  async typeNamesOf(oids: readonly number[]): Promise<TypeNames> {
    const missing = [...new Set(oids)].filter((oid) => !this.typeNames.has(oid));
    if (missing.length > 0) {
      const found = await this.pool.query<{ oid: string; name: string }>(
        `SELECT t.oid::text AS oid, pg_catalog.format_type(t.oid, NULL) AS name
         FROM pg_catalog.pg_type t WHERE t.oid = ANY($1::oid[])`,
        [missing],
      );
      for (const t of found.rows) this.typeNames.set(Number(t.oid), t.name);
    }
    return this.typeNames;
  }

  /**
   * Runs one checked statement in its own read-only transaction, in one round trip (see
   * {@link ReadOnlyStatement}), collecting its rows into `rows` under their caps. `prepare`
   * runs first on the same connection, outside the transaction (the catalog rules: cached
   * lookups cost nothing, a miss one query), and returns the statement to run. The connection
   * is destroyed, never reused, after any error, a cancellation, a dropped result or a session
   * left dirty. Aborting the call cancels the backend query through another connection.
   */
  async runStatement(
    bounds: CallBounds,
    prepare: (client: PoolClient) => Promise<StatementPlan>,
  ): Promise<QueryOutput> {
    return traceUpstream('postgresql transaction', this.spanAttributes, async () => {
      await this.verified(bounds);
      for (let attempt = 1; ; attempt++) {
        const client = await this.connect(bounds);
        const abort = this.cancelOnAbort(client, bounds.signal);
        let spoiled: unknown;
        let answered = false;
        let rows: CappedRows;
        let sent = false;
        try {
          if (bounds.signal.aborted) throw bounds.signal.reason;
          const plan = await prepare(client);
          sent = true;
          rows = plan.rows;
          const statement = new ReadOnlyStatement(
            this.settings(bounds),
            plan.sql,
            plan.params,
            rows,
            plan.sessionCheck ?? true,
          );
          client.query(statement);
          const outcome = await statement.done.finally(() => {
            answered = statement.answered;
          });
          spoiled =
            'dropped' in outcome
              ? new Error('a result past the byte cap was dropped unread')
              : this.leftBehind(outcome.dirty);
        } catch (error) {
          abort.stop();
          // A statement the rules refused before anything of it was sent leaves the connection
          // as it was (only the catalog lookups ran on it); any other error destroys it.
          client.release(sent || !(error instanceof PolicyError) || abort.reason() !== undefined);
          // A pooled connection the server dropped (restart, failover, network cut) fails before
          // PostgreSQL answered anything: one fresh connection may try again.
          if (attempt === 1 && !answered && !bounds.signal.aborted && isUnavailable(error))
            continue;
          throw translateError(error, bounds.signal);
        }
        abort.stop();
        // release(true) destroys the connection: whatever state it was left in dies with it.
        client.release((spoiled ?? abort.reason()) !== undefined);
        return rows.output(await this.typeNamesOf(rows.fields.map((f) => f.dataTypeID)));
      }
    });
  }

  /** The role check has passed (run now if it has not yet), or the call's error. */
  private async verified(bounds: CallBounds): Promise<void> {
    try {
      await this.ensureVerified();
    } catch (error) {
      throw translateError(error, bounds.signal);
    }
  }

  /** statement_timeout of a call: the setting, or less when the call's deadline is nearer. */
  private statementTimeout(bounds: CallBounds): number {
    const remaining = Math.floor(bounds.deadline - Date.now());
    return Math.max(1, Math.min(this.config.POSTGRES_STATEMENT_TIMEOUT_MS, remaining));
  }

  /**
   * While the call runs, aborting it cancels the backend query through another connection.
   * `reason` is the abort's reason once it fired (the connection must not be reused then).
   */
  private cancelOnAbort(client: PoolClient, signal: AbortSignal) {
    let reason: unknown;
    const pid = (client as unknown as { processID?: number }).processID;
    const onAbort = (): void => {
      reason = signal.reason ?? new Error('aborted');
      if (pid !== undefined) void this.cancelBackend(pid);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    return {
      reason: (): unknown => reason,
      stop: (): void => signal.removeEventListener('abort', onAbort),
    };
  }

  /** What the session check found, logged, as the reason not to reuse the connection. */
  private leftBehind(dirty: string): Error | undefined {
    if (dirty === '') return undefined;
    this.logger.warn(
      { dirty },
      'a call left session state behind (a function doing more than it declares); the connection was destroyed',
    );
    return new Error(`session left dirty: ${dirty}`);
  }

  /** This call's transaction settings: search_path, lock, statement and idle timeouts. */
  private settings(bounds: CallBounds): string[] {
    const timeout = this.statementTimeout(bounds);
    return [
      this.searchPath,
      String(this.config.POSTGRES_LOCK_TIMEOUT_MS),
      String(timeout),
      String(timeout + 5_000),
    ];
  }

  /** A pooled connection, or the call's abort reason. */
  private async connect(bounds: CallBounds): Promise<PoolClient> {
    try {
      return await waitOrAbort(this.pool.connect(), bounds.signal, (late) => late.release());
    } catch (error) {
      throw translateError(error, bounds.signal);
    }
  }

  /**
   * Runs `fn` inside `BEGIN READ ONLY` with this call's timeouts and the allowed search_path,
   * then always rolls back (layer 3). The client is destroyed, never reused, after any error or
   * cancellation. Aborting the call cancels the backend query through another connection.
   */
  async transaction<T>(bounds: CallBounds, fn: (client: PoolClient) => Promise<T>): Promise<T> {
    // One CLIENT span per transaction when tracing is on: the database system and host, no SQL.
    return traceUpstream('postgresql transaction', this.spanAttributes, () =>
      this.runTransaction(bounds, fn),
    );
  }

  private async runTransaction<T>(
    bounds: CallBounds,
    fn: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    await this.verified(bounds);
    const client = await this.begin(bounds);
    const abort = this.cancelOnAbort(client, bounds.signal);
    let spoiled: unknown;
    try {
      if (bounds.signal.aborted) throw bounds.signal.reason;
      return await fn(client);
    } catch (error) {
      // A refusal by the rules is no error of the connection's: it is rolled back and checked
      // like any other call's.
      if (!(error instanceof PolicyError)) spoiled = error;
      throw translateError(error, bounds.signal);
    } finally {
      abort.stop();
      spoiled ??= abort.reason();
      if (spoiled === undefined) {
        try {
          // Back to the pool only in a clean session state: what a function may have left
          // behind past ROLLBACK (a session advisory lock, a prepared statement, …) is found in
          // the same round trip, and the connection is destroyed instead.
          spoiled = this.leftBehind(await this.rollbackAndCheck(client));
        } catch (error) {
          spoiled = error;
        }
      }
      // release(true) destroys the connection: whatever state an error left it in dies with it.
      client.release(spoiled !== undefined);
    }
  }

  /**
   * ROLLBACK, then — in the same round trip — what the session kept that a clean one does not:
   * session advisory locks, prepared statements, open cursors, LISTEN channels, changed
   * settings, temporary objects, another role. Returns what it found ('' when clean).
   */
  private async rollbackAndCheck(client: PoolClient): Promise<string> {
    const results = (await client.query(`ROLLBACK; ${SESSION_CHECK}`)) as unknown as Array<{
      rows: Array<{ dirty: string }>;
    }>;
    return results[1]?.rows[0]?.dirty ?? 'the session check did not answer';
  }

  /** A pooled connection inside `BEGIN READ ONLY` with this call's settings. */
  private async begin(bounds: CallBounds): Promise<PoolClient> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.connect(bounds);
      try {
        const timeout = this.statementTimeout(bounds);
        await client.query(
          // The closing SELECT takes the transaction's snapshot: from then on PostgreSQL refuses
          // SET TRANSACTION READ WRITE ("must be set before any query"), which SET alone does not.
          `${this.beginPrefix}; SET LOCAL statement_timeout = ${timeout}; SET LOCAL idle_in_transaction_session_timeout = ${timeout + 5_000}; SELECT 1`,
        );
        return client;
      } catch (error) {
        client.release(true);
        // An idle pooled connection the server dropped (restart, failover, network cut) fails
        // here, before anything of the call ran: one fresh connection may try again.
        if (attempt === 1 && !bounds.signal.aborted && isUnavailable(error)) continue;
        throw translateError(error, bounds.signal);
      }
    }
  }

  /** Cancels the query running on backend `pid`, from a separate short-lived connection. */
  async cancelBackend(pid: number): Promise<void> {
    const client = new pg.Client({
      connectionString: this.config.POSTGRES_URL,
      connectionTimeoutMillis: this.config.POSTGRES_CONNECT_TIMEOUT_MS,
      application_name: 'gatehouse-postgres-cancel',
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT pg_catalog.pg_cancel_backend($1)', [pid]);
      this.logger.debug({ pid }, 'cancelled the backend query');
    } catch (error) {
      this.logger.warn({ err: error, pid }, 'could not cancel the backend query');
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Entries in the catalog cache now (bounded by the cache's size). */
  get catalogCacheSize(): number {
    return this.reachedCache?.size ?? 0;
  }

  /**
   * Catalog lookups for the SQL policy and name resolution, cached (bounded, for
   * POSTGRES_CATALOG_TTL_MS). What one call has looked up stays put for that call.
   */
  catalog(client: pg.ClientBase): Catalog {
    const ttl = this.config.POSTGRES_CATALOG_TTL_MS;
    const current = (at: number): boolean => Date.now() - at < ttl;
    const local = new Map<string, RelationInfo | null>();
    const relation = (key: string): RelationInfo | null | undefined => {
      // Keys are relationKey(schema, name).
      const known = local.get(key);
      if (known !== undefined) return known;
      const cached = this.relationCache?.get(key);
      if (cached === undefined) return undefined;
      const info = cached === NO_RELATION ? null : cached;
      local.set(key, info);
      return info;
    };
    return {
      reached: async (objects) => {
        const key = JSON.stringify([
          objects.functions,
          objects.columnFunctions,
          objects.operators,
          objects.relations,
          objects.types,
        ]);
        const hit = this.reachedCache?.get(key);
        if (hit !== undefined) return hit;
        const found = await client.query<
          | ({ kind: 'function' } & ReachedFunction)
          | {
              kind: 'view' | 'foreign' | 'lookup type';
              schema: string;
              name: string;
              definition: string;
            }
        >({
          // Named: planned once per connection, not per query.
          name: 'gatehouse_reached_functions',
          text: REACHED_FUNCTIONS,
          values: [
            ...splitNames(objects.functions),
            ...splitNames(objects.operators),
            ...splitNames(objects.relations),
            ...splitNames(objects.types),
            ...splitNames(objects.columnFunctions),
          ],
        });
        const reached: Reached = { functions: [], views: [], foreign: [], lookupTypes: [] };
        for (const row of found.rows) {
          if (row.kind === 'view') reached.views.push(row);
          else if (row.kind === 'foreign') reached.foreign.push(row);
          else if (row.kind === 'lookup type') {
            reached.lookupTypes.push(relationKey(row.schema, row.name));
          } else reached.functions.push(row as ReachedFunction);
        }
        this.reachedCache?.set(key, reached);
        return reached;
      },
      maskedColumns: async (options = {}) => {
        if (this.maskPatterns.length === 0) return NO_MASKS;
        if (this.maskCache !== undefined && current(this.maskCache.at) && options.fresh !== true) {
          return this.maskCache.set;
        }
        const set = await this.resolveMasked(client);
        this.maskCache = { set, at: Date.now() };
        return set;
      },
      relation: (schema, name) => relation(relationKey(schema, name)),
      loadRelations: async (keys, options = {}) => {
        const wanted = [...new Set(keys)].filter(
          (key) => options.fresh === true || relation(key) === undefined,
        );
        if (wanted.length === 0) return;
        const found = await client.query<{
          oid: string;
          schema: string;
          name: string;
          kind: string;
          column_names: string[];
          column_numbers: number[];
          definition: string | null;
          policy_columns: number[];
          partition_key: string[];
          ancestor_keys: string[];
          descendant_schemas: string[];
          row_estimate: number | null;
        }>({
          name: 'gatehouse_relations',
          text: RELATIONS,
          values: splitNames(wanted),
        });
        const infos = new Map<string, RelationInfo | null>(wanted.map((key) => [key, null]));
        for (const row of found.rows) {
          infos.set(relationKey(row.schema, row.name), {
            oid: Number(row.oid),
            schema: row.schema,
            name: row.name,
            kind: row.kind,
            columns: row.column_names.map((column, i) => ({
              name: column,
              attnum: row.column_numbers[i]!,
            })),
            definition: row.definition === null ? undefined : await parseDefinition(row.definition),
            policyColumns: row.policy_columns,
            partitionKey: row.partition_key,
            ancestorKeys: row.ancestor_keys,
            descendantSchemas: row.descendant_schemas,
            ...(row.row_estimate === null ? {} : { rowEstimate: row.row_estimate }),
          });
        }
        for (const [key, info] of infos) {
          local.set(key, info);
          this.relationCache?.set(key, info ?? NO_RELATION);
        }
      },
    };
  }

  /**
   * The database's side of masking: the masked columns the role may SELECT. For them masking is
   * this server's guarantee alone; revoked (column privileges), PostgreSQL refuses every use of
   * them too, whatever the SQL (servers/postgres/README.md, "Masking and column privileges").
   */
  async maskingReport(): Promise<{ columns: number; readable: string[]; unmatched: string[] }> {
    if (this.maskPatterns.length === 0) return { columns: 0, readable: [], unmatched: [] };
    const client = await this.pool.connect();
    try {
      const set = await this.resolveMasked(client);
      // The first call uses what the start looked up (for the TTL, like any lookup).
      if (this.config.POSTGRES_CATALOG_TTL_MS > 0) this.maskCache = { set, at: Date.now() };
      const { columns } = set;
      const readable = await client.query<{ i: number }>(
        `SELECT t.i FROM unnest($1::oid[], $2::int2[]) WITH ORDINALITY t(oid, attnum, i)
         WHERE pg_catalog.has_column_privilege(t.oid, t.attnum, 'SELECT')`,
        [columns.map((c) => c.tableOid), columns.map((c) => c.attnum)],
      );
      // A pattern that matches no column masks nothing: a typo leaves the column in the clear.
      const unmatched = this.config.POSTGRES_MASK_COLUMNS.filter(
        (_pattern, i) =>
          !columns.some((c) => matches(this.maskPatterns[i]!, c.schema, c.table, c.column)),
      );
      return {
        unmatched,
        columns: columns.length,
        readable: readable.rows
          .map((r) => {
            const c = columns[Number(r.i) - 1]!;
            return `${c.schema}.${c.table}.${c.column}`;
          })
          .sort(),
      };
    } finally {
      client.release();
    }
  }

  /** The masked columns (POSTGRES_MASK_COLUMNS, with inheritance children and parents). */
  async resolveMasked(client: pg.ClientBase): Promise<MaskedSet> {
    if (this.maskPatterns.length === 0) return NO_MASKS;
    const found = await client.query<{
      schema: string;
      table: string;
      column: string;
      table_oid: string;
      attnum: number;
      generated: string;
      source: string | null;
    }>(MASKED_COLUMNS, [
      this.maskPatterns.map((p) => p.schema),
      this.maskPatterns.map((p) => p.table),
      this.maskPatterns.map((p) => p.column),
    ]);
    const columns = found.rows.map((r) => ({
      schema: r.schema,
      table: r.table,
      column: r.column,
      tableOid: Number(r.table_oid),
      attnum: r.attnum,
      ...(r.source === null || r.generated === ''
        ? {}
        : {
            generated: r.generated === 'v' ? ('virtual' as const) : ('stored' as const),
            source: r.source,
          }),
    }));
    return { columns, byOrigin: new Map(columns.map((c) => [`${c.tableOid}:${c.attnum}`, c])) };
  }

  private refused(): boolean {
    return this.verification.state === 'refused';
  }

  /** `/readyz`: the database answers (within 2 s) and the role check has not refused. */
  async ready(): Promise<ReadyResult> {
    const refused = { ready: false, detail: 'the PostgreSQL role can write; see the server log' };
    if (this.refused()) return refused;
    const probe = AbortSignal.timeout(2_000);
    try {
      await this.transaction({ signal: probe, deadline: Date.now() + 2_000 }, async (client) => {
        await client.query('SELECT 1');
      });
      return { ready: true };
    } catch (error) {
      // The probe may have run the role check for the first time.
      if (this.refused()) return refused;
      this.logger.debug({ err: error }, 'readiness check failed');
      return { ready: false, detail: 'PostgreSQL is unreachable' };
    }
  }

  /** Closes the pool (on shutdown). */
  async close(): Promise<void> {
    await this.pool.end();
  }
}
