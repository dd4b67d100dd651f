import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  FIXTURE_MASKS,
  addMaskingFixture,
  companyDatabase,
  connectPostgres,
  text,
} from './helpers.ts';
import type { CompanyDatabase, PostgresHarness } from './helpers.ts';
import { seededRandom } from '@gatehouse/testkit';
import {
  CONSTRUCTIONS,
  HIDDEN,
  LOOKUPS_WITH_PARAMS,
  ROADS,
  SINKS,
  vary,
  varyRoad,
} from './roads.ts';

// The class-level oracle of masking and hidden schemas: two databases that differ only in the
// masked values (same lengths) and in a hidden schema — its contents, which objects exist in it
// and the names of the hidden tables the views read — one server on each, the same statements
// to both. Any answer that differs between the two is a leak: a refusal or an error counts only
// when its text is the same in both worlds (a refusal that names a hidden object differs). Every road to a masked value is combined with every sink (test/roads.ts),
// plus the roads to hidden schemas and catalogs; the long run (GATEHOUSE_TEST_LONG=1, in
// `npm run test:long`) adds thousands of seeded random variations of them.

const LONG = process.env.GATEHOUSE_TEST_LONG === '1';
const SEED = Number(process.env.GATEHOUSE_TEST_SEED ?? 20261202);
const VARIATIONS = LONG ? 20_000 : 200;

/** The secret values of world B: other values of the same length (world A keeps its own). */
const REWRITE = {
  a: [
    'UPDATE employees SET national_id = national_id, email = email',
    'UPDATE customers SET email = email',
    'UPDATE payroll SET ssn = ssn',
    'UPDATE people SET badge = badge',
    'UPDATE tokens SET token = token',
    'UPDATE notes SET secret = secret',
    'UPDATE identities SET national_id = national_id',
    "INSERT INTO hr.secrets SELECT i, 'HIDDEN-' || i FROM generate_series(1, 10) i",
    // Hidden objects that exist in this world only.
    'CREATE TABLE hr.only_a (id int)',
    "CREATE TYPE hr.mood_a AS ENUM ('calm')",
    'CREATE TEXT SEARCH CONFIGURATION hr.words_a (COPY = simple)',
  ],
  b: [
    `UPDATE employees SET national_id = 'NID-' || reverse(substr(national_id, 5)),
       email = translate(email, 'aeiou0123456789', 'uoiea9876543210')`,
    "UPDATE customers SET email = translate(email, 'aeiou0123456789', 'uoiea9876543210')",
    "UPDATE payroll SET ssn = 'SSN-' || reverse(substr(ssn, 5))",
    "UPDATE people SET badge = 'B-' || reverse(substr(badge, 3))",
    "UPDATE tokens SET token = translate(token, 'ABC', 'CAB')",
    "UPDATE notes SET secret = translate(secret, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'NOPQRSTUVWXYZABCDEFGHIJKLM')",
    "UPDATE identities SET national_id = 'NID-' || reverse(substr(national_id, 5))",
    "INSERT INTO hr.secrets SELECT i, 'HIDDEN-' || (i * 7) FROM generate_series(1, 30) i",
    // The hidden tables the views read, under other names; other hidden objects.
    'ALTER TABLE hr.salaries RENAME TO wages',
    'ALTER TABLE hr.contacts RENAME TO addresses',
    "UPDATE hr.addresses SET email = translate(email, 'c0123456789', 'd9876543210')",
    'CREATE TABLE hr.only_b (id int)',
    "CREATE TYPE hr.mood_b AS ENUM ('calm')",
  ],
};

interface World {
  readonly db: CompanyDatabase;
  readonly server: PostgresHarness;
}

async function world(name: 'a' | 'b'): Promise<CompanyDatabase> {
  const db = await companyDatabase(inject('pgAdminUrl'), `ni_${name}`);
  await addMaskingFixture(db);
  for (const sql of REWRITE[name]) await db.admin.query(sql);
  await db.admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA hr TO ${db.role}`);
  await db.admin.query('REFRESH MATERIALIZED VIEW staff_mv');
  return db;
}

const REWRITTEN = [
  'employees',
  'customers',
  'payroll',
  'people',
  'visitors',
  'tokens',
  'notes',
  'identities',
];

/**
 * The same physical layout in both worlds: the rewritten tables compacted (the rows' order and
 * positions kept), then vacuumed and analysed so that the visibility map and statistics are set
 * now rather than whenever autovacuum reaches one world (VACUUM FULL leaves the map empty: a plan
 * in the world autovacuum had visited chose an index-only scan, the other a sort). A transaction
 * elsewhere in the cluster can keep dead rows from being removed for a moment: the sizes and the
 * planner's view of each table (pages, rows, all-visible pages) are compared, and the tables
 * compacted again until equal.
 */
async function compact(worlds: readonly CompanyDatabase[]): Promise<void> {
  const sizes = (db: CompanyDatabase) =>
    db.admin
      .query<{ s: string }>(
        `SELECT string_agg(
                  format('%s=%s/%s/%s/%s', relname, pg_relation_size(oid), relpages, reltuples,
                         relallvisible), ',' ORDER BY relname) AS s
         FROM pg_class WHERE relkind IN ('r', 'm') AND relnamespace = 'public'::regnamespace`,
      )
      .then((r) => r.rows[0]!.s);
  for (let attempt = 1; ; attempt++) {
    for (const db of worlds) {
      for (const table of REWRITTEN) await db.admin.query(`VACUUM FULL ${table}`);
      await db.admin.query('VACUUM (ANALYZE)');
    }
    const [first, ...rest] = await Promise.all(worlds.map(sizes));
    if (rest.every((s) => s === first)) return;
    if (attempt === 20)
      throw new Error(`the two worlds' tables differ in size: ${first} / ${rest[0]}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

let a: World;
let b: World;
const extra: PostgresHarness[] = [];

beforeAll(async () => {
  const env = { POSTGRES_MASK_COLUMNS: FIXTURE_MASKS, GATEHOUSE_STRUCTURED_OUTPUT: 'false' };
  const dbA = await world('a');
  const dbB = await world('b');
  await compact([dbA, dbB]);
  a = { db: dbA, server: await connectPostgres({ POSTGRES_URL: dbA.url, ...env }) };
  b = { db: dbB, server: await connectPostgres({ POSTGRES_URL: dbB.url, ...env }) };
});

afterAll(async () => {
  for (const h of [a?.server, b?.server, ...extra]) await h?.close();
  await a?.db.close();
  await b?.db.close();
});

interface Call {
  readonly tool: 'postgres_query' | 'postgres_explain';
  readonly sql: string;
  readonly params?: readonly string[];
}

/** An answer as compared: what differs only by run (timings, nonces, names) made equal. */
function normalise(body: string, w: World): string {
  return body
    .replaceAll(w.db.db.name, 'DB')
    .replace(/ in [\d.]+ ms/g, ' in X ms')
    .replace(/untrusted-data-[0-9a-f]+/g, 'untrusted-data-N')
    .replace(/incident [0-9a-f-]+/g, 'incident X');
}

async function ask(server: PostgresHarness, w: World, call: Call) {
  const args =
    call.params === undefined ? { sql: call.sql } : { sql: call.sql, params: call.params };
  const result = await server.client.callTool({ name: call.tool, arguments: args });
  return { isError: result.isError === true, text: normalise(text(result), w) };
}

type Outcome = 'answered' | 'refused' | 'error';

/** Runs the calls against both worlds; returns the differing ones and what each outcome was. */
async function differential(
  calls: readonly Call[],
  servers: readonly [PostgresHarness, PostgresHarness] = [a.server, b.server],
) {
  const leaks: Array<{ call: Call; a: string; b: string }> = [];
  const outcomes: Outcome[] = [];
  for (let i = 0; i < calls.length; i += 4) {
    await Promise.all(
      calls.slice(i, i + 4).map(async (call) => {
        const [inA, inB] = await Promise.all([ask(servers[0], a, call), ask(servers[1], b, call)]);
        // An answer of the core's (a limit) compares nothing: none may be one.
        expect(inA.text).not.toMatch(/^Too many calls|rate limit/i);
        if (inA.isError !== inB.isError || inA.text !== inB.text) {
          leaks.push({ call, a: inA.text, b: inB.text });
        }
        outcomes.push(
          !inA.isError
            ? 'answered'
            : /Refused by the read-only SQL policy/.test(inA.text)
              ? 'refused'
              : 'error',
        );
      }),
    );
  }
  return { leaks, outcomes };
}

function grid(): Array<Call & { road: string; sink: string }> {
  return ROADS.flatMap((road) =>
    SINKS.map((sink) => ({ ...sink.build(road), road: road.name, sink: sink.name })),
  );
}

function report(name: string, calls: number, outcomes: readonly Outcome[], covered: string): void {
  const count = (o: Outcome) => outcomes.filter((x) => x === o).length;
  console.log(
    `non-interference (${name}): ${calls} statements${covered}; ${count('answered')} answered, ${count('refused')} refused, ${count('error')} PostgreSQL errors — in both worlds alike`,
  );
}

function shown(leaks: ReadonlyArray<{ call: Call; a: string; b: string }>): string {
  const statements = leaks.map((l) => `  ${l.call.tool}: ${l.call.sql}`).join('\n');
  return `${leaks.length} statements answer differently:\n${statements}\nthe first five:\n${leaks
    .slice(0, 5)
    .map(
      (l) => `${l.call.tool}: ${l.call.sql}\n  A: ${l.a.slice(0, 400)}\n  B: ${l.b.slice(0, 400)}`,
    )
    .join('\n')}`;
}

describe('two databases that differ only in masked values and hidden contents', () => {
  it(
    'answer every road × sink alike (refused alike, or masked alike)',
    { timeout: 300_000 },
    async () => {
      const calls = grid();
      const { leaks, outcomes } = await differential(calls);
      report(
        'roads × sinks',
        calls.length,
        outcomes,
        ` (${ROADS.length} roads × ${SINKS.length} sinks)`,
      );
      expect(leaks, shown(leaks)).toEqual([]);
      // The oracle has answers to compare, not only refusals: the controls at least.
      expect(outcomes.filter((o) => o === 'answered').length).toBeGreaterThan(ROADS.length * 3);
    },
  );

  it('answer the roads to hidden schemas and catalogs, and other constructions, alike', async () => {
    const calls: Call[] = [
      ...[...HIDDEN, ...CONSTRUCTIONS].map((sql) => ({ tool: 'postgres_query' as const, sql })),
      ...LOOKUPS_WITH_PARAMS.map(([sql, params]) => ({
        tool: 'postgres_query' as const,
        sql,
        params,
      })),
    ];
    const { leaks, outcomes } = await differential(calls);
    report('hidden schemas, catalogs, other constructions', calls.length, outcomes, '');
    expect(leaks, shown(leaks)).toEqual([]);
  });

  it(
    `answer ${VARIATIONS} seeded variations alike (seed ${SEED})`,
    { timeout: 1_800_000 },
    async () => {
      const next = seededRandom(SEED);
      const calls: Call[] = [];
      const pairs = new Set<string>();
      for (let i = 0; i < VARIATIONS; i++) {
        const road = ROADS[Math.floor(next() * ROADS.length)]!;
        const sink = SINKS[Math.floor(next() * SINKS.length)]!;
        const call = sink.build(varyRoad(road, next));
        pairs.add(`${road.name} × ${sink.name}`);
        calls.push({ ...call, sql: vary(call.sql, next) });
      }
      const { leaks, outcomes } = await differential(calls);
      report('variations', calls.length, outcomes, ` (${pairs.size} roads × sinks)`);
      expect(leaks, shown(leaks)).toEqual([]);
    },
  );

  it('tells them apart when masking is off: the oracle sees a leak where there is one', async () => {
    const off = { POSTGRES_MASK_COLUMNS: '', GATEHOUSE_STRUCTURED_OUTPUT: 'false' };
    const servers = [
      await connectPostgres({ POSTGRES_URL: a.db.url, ...off }),
      await connectPostgres({ POSTGRES_URL: b.db.url, ...off }),
    ] as const;
    extra.push(...servers);
    const calls = grid().filter((c) => ['projected', 'WHERE <', 'ORDER BY'].includes(c.sink));
    const { leaks } = await differential(calls, servers);
    // Every road whose masked value is readable at all gives it away somewhere.
    const leaking = new Set(leaks.map((l) => calls.find((c) => c.sql === l.call.sql)!.road));
    console.log(
      `non-interference (masking off): ${leaks.length} of ${calls.length} statements differ, on ${leaking.size} of ${ROADS.length} roads`,
    );
    expect(leaking.size).toBeGreaterThanOrEqual(ROADS.length - 4);
  });
});
