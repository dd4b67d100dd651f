import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { parse } from 'libpg-query';
import type { SelectStmt } from 'libpg-query';
import type { PostgresConfig } from '../config.js';
import { matches, parseMaskPatterns } from './masking.js';
import type { MaskPattern } from './masking.js';
import type { CatalogLookup, Reached, ReachedFunction } from './policy.js';
import { relationKey } from './resolve.js';
import type { MaskedColumn, RelationInfo } from './resolve.js';

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
       (SELECT fns.via FROM fns WHERE fns.oid = p.oid) AS via, NULL::text AS definition,
       -- What could make the call run as someone else (ADR 0027): built-ins cannot (set_config
       -- is refused by name); a SET clause or a body that sets the role or a gatehouse setting,
       -- dynamic SQL, or a body this server cannot read (a trusted PL) could.
       CASE
         WHEN p.pronamespace = 'pg_catalog'::regnamespace THEN NULL
         WHEN EXISTS (SELECT 1 FROM unnest(p.proconfig) c(setting)
                      WHERE c.setting ~* '^(role|session_authorization|gatehouse\\.[^=]*)=')
           THEN 'its SET clause sets the role or a gatehouse setting'
         WHEN l.lanname IN ('sql', 'plpgsql')
              AND p.prosrc ~* '\\mset_config\\M|\\m(set|reset)\\s+(local\\s+|session\\s+)?(role\\M|session\\s+authorization\\M|all\\M|gatehouse\\.)'
           THEN 'its body sets the role or a setting (set_config, SET ROLE, SET SESSION AUTHORIZATION, RESET)'
         WHEN l.lanname = 'plpgsql' AND p.prosrc ~* '\\mexecute\\M'
           THEN 'its body runs dynamic SQL (EXECUTE), which could set the role'
         WHEN l.lanname NOT IN ('sql', 'plpgsql', 'c', 'internal')
           THEN 'its body is in ' || l.lanname || ', which this server cannot read for a role switch'
       END AS switches
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.oid = ANY (ARRAY(SELECT oid FROM fns))
UNION ALL
-- The views read, with their definitions: what they call among the built-in functions is not in
-- pg_depend (built-ins are pinned), so the policy parses the definitions.
SELECT CASE c.relkind WHEN 'v' THEN 'view' ELSE 'foreign' END, n.nspname, c.relname, NULL, NULL, NULL,
       'view', CASE c.relkind WHEN 'v' THEN pg_catalog.pg_get_viewdef(c.oid) END, NULL
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v', 'f') AND c.oid = ANY (ARRAY(SELECT oid FROM obj WHERE kind = 'r'))
UNION ALL
-- The named types whose input looks names up (see tclos).
SELECT DISTINCT 'lookup type', n.nspname, t.typname, NULL::text, NULL::boolean, NULL::boolean, 'type', NULL::text, NULL::text
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

/**
 * The catalog lookups the SQL policy, name resolution and masking make, with their caches: what
 * each set of names reaches, relations by name, and the masked columns — each bounded and kept
 * for POSTGRES_CATALOG_TTL_MS (none when it is 0). Keyed by what is looked up and by the role the
 * call runs as (ADR 0027): no role's lookup answers another role's call. The masked columns are
 * the operator's rule resolved on the catalog, the same for every role.
 */
export class Catalogs {
  private readonly maskPatterns: readonly MaskPattern[];
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

  constructor(
    private readonly config: PostgresConfig,
    options: { catalogCacheEntries?: number } = {},
  ) {
    this.maskPatterns = parseMaskPatterns(config.POSTGRES_MASK_COLUMNS);
    const max = options.catalogCacheEntries ?? CATALOG_CACHE_ENTRIES;
    const ttl = config.POSTGRES_CATALOG_TTL_MS;
    this.reachedCache = ttl === 0 ? undefined : new LRUCache({ max, ttl });
    this.relationCache = ttl === 0 ? undefined : new LRUCache({ max: max * 4, ttl });
  }

  /** Entries in the reached-functions cache now (bounded by its size). */
  get cachedSets(): number {
    return this.reachedCache?.size ?? 0;
  }

  /**
   * Catalog lookups for the SQL policy and name resolution, cached (bounded, for
   * POSTGRES_CATALOG_TTL_MS). What one call has looked up stays put for that call.
   */
  lookup(client: pg.ClientBase, role: string | undefined): Catalog {
    const ttl = this.config.POSTGRES_CATALOG_TTL_MS;
    // Every entry is the asking role's (ADR 0027): one role's lookups never answer another's.
    const who = `${role ?? ''}\u0000`;
    const current = (at: number): boolean => Date.now() - at < ttl;
    const local = new Map<string, RelationInfo | null>();
    const relation = (key: string): RelationInfo | null | undefined => {
      // Keys are relationKey(schema, name).
      const known = local.get(key);
      if (known !== undefined) return known;
      const cached = this.relationCache?.get(who + key);
      if (cached === undefined) return undefined;
      const info = cached === NO_RELATION ? null : cached;
      local.set(key, info);
      return info;
    };
    return {
      reached: async (objects) => {
        const key =
          who +
          JSON.stringify([
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
          this.relationCache?.set(who + key, info ?? NO_RELATION);
        }
      },
    };
  }

  /**
   * The database's side of masking: the masked columns the role may SELECT. For them masking is
   * this server's guarantee alone; revoked (column privileges), PostgreSQL refuses every use of
   * them too, whatever the SQL (servers/postgres/README.md, "Masking and column privileges").
   */
  async maskingReport(
    pool: pg.Pool,
    /** The mapped roles (ADR 0027): a column any of them may SELECT counts; none: the login. */
    roles: readonly string[] = [],
  ): Promise<{ columns: number; readable: string[]; unmatched: string[] }> {
    if (this.maskPatterns.length === 0) return { columns: 0, readable: [], unmatched: [] };
    const client = await pool.connect();
    try {
      const set = await this.resolveMasked(client);
      // The first call uses what the start looked up (for the TTL, like any lookup).
      if (this.config.POSTGRES_CATALOG_TTL_MS > 0) this.maskCache = { set, at: Date.now() };
      const { columns } = set;
      const readable = await client.query<{ i: number }>(
        `SELECT t.i FROM unnest($1::oid[], $2::int2[]) WITH ORDINALITY t(oid, attnum, i)
         WHERE CASE WHEN cardinality($3::text[]) = 0
                    THEN pg_catalog.has_column_privilege(t.oid, t.attnum, 'SELECT')
                    ELSE EXISTS (SELECT 1 FROM unnest($3::text[]) r
                                 WHERE pg_catalog.has_column_privilege(r::name, t.oid, t.attnum, 'SELECT')) END`,
        [columns.map((c) => c.tableOid), columns.map((c) => c.attnum), roles],
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
  private async resolveMasked(client: pg.ClientBase): Promise<MaskedSet> {
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
}
