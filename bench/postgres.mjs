#!/usr/bin/env -S node --liftoff-only
// The Postgres server against @modelcontextprotocol/server-postgres@0.6.2 (the reference, over
// stdio) and against raw `pg`, in one run on one database (see bench/README.md).
//   node bench/postgres.mjs   (after a build; `npm run bench -- postgres` builds first; the
//   node flag on the first line as the bin has it, which bench/run.mjs passes on)
// Knobs: BENCH_COLD (spawns per server, default 10), BENCH_CALLS (calls per query and server,
// default 300), GATEHOUSE_TEST_PG_URL (an external server instead of an embedded one).
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@gatehouse/core';
import { createLogger } from '@gatehouse/core/runtime';
import { PostgresConfigSchema, createPostgresServer } from '@gatehouse/server-postgres';
import { connectStdio } from '@gatehouse/testkit';
import { freshDatabase, startPostgres } from '@gatehouse/testkit/postgres';
import pg from 'pg';
import { seedCompany } from '../servers/postgres/demo/seed.mjs';
import { BENCH_ENV, binFlags, median, p99, referenceBin } from './servers.mjs';

const COLD = Number(process.env.BENCH_COLD ?? 10);
const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const OURS = fileURLToPath(new URL('../servers/postgres/dist/index.js', import.meta.url));
const REFERENCE = referenceBin('@modelcontextprotocol/server-postgres', 'mcp-server-postgres');

const ms = (n) => `${n.toFixed(2)} ms`;
const now = () => performance.now();

const QUERIES = {
  '1 row': 'SELECT id, name, country FROM customers WHERE id = 42',
  '1 000 rows': 'SELECT * FROM order_items ORDER BY order_id, product_id LIMIT 1000',
};
const MILLION = 'SELECT g AS id, md5(g::text) AS hash FROM generate_series(1, 1000000) g';

const cluster = await startPostgres(process.env.GATEHOUSE_TEST_PG_URL);
const { readOnlyUrl } = await seedCompany(cluster.adminUrl, `bench_${process.pid}`);

// Our server gets caps that return the same 1 000 rows as the reference (its default is 500),
// rate limits out of the way, and its audit trail on stderr (to /dev/null).
const oursEnv = {
  PATH: process.env.PATH ?? '',
  POSTGRES_URL: readOnlyUrl,
  POSTGRES_MAX_ROWS: '1000',
  POSTGRES_MAX_BYTES: String(4 * 1024 * 1024),
  GATEHOUSE_MAX_OUTPUT_BYTES: String(16 * 1024 * 1024),
  ...BENCH_ENV,
};
const servers = {
  gatehouse: {
    connect: (env = oursEnv) =>
      connectStdio(process.execPath, [...binFlags('postgres'), OURS], { env, stderr: 'ignore' }),
    call: (client, sql) => client.callTool({ name: 'postgres_query', arguments: { sql } }),
  },
  reference: {
    connect: () =>
      connectStdio(process.execPath, [REFERENCE, readOnlyUrl], {
        env: { PATH: process.env.PATH ?? '' },
        stderr: 'ignore',
      }),
    call: (client, sql) => client.callTool({ name: 'query', arguments: { sql } }),
  },
};

function check(result, name) {
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  return result;
}

const progress = (text) => process.stderr.write(`${text}\n`);
progress('cold starts…');
// 1. Cold start to the first answer: spawn, initialize, one query.
const cold = { gatehouse: [], reference: [] };
for (let i = 0; i < COLD; i++) {
  for (const [name, server] of Object.entries(servers)) {
    const start = now();
    const connection = await server.connect();
    check(await server.call(connection.client, QUERIES['1 row']), name);
    cold[name].push(now() - start);
    await connection.close();
  }
}

progress('warm latency…');
// 2. Latency of the same queries on a warm connection, interleaved.
const connections = {};
for (const [name, server] of Object.entries(servers)) connections[name] = await server.connect();
const latency = {};
for (const [label, sql] of Object.entries(QUERIES)) {
  latency[label] = { gatehouse: [], reference: [], bytes: {} };
  for (let i = 0; i < CALLS + 20; i++) {
    for (const [name, server] of Object.entries(servers)) {
      const start = now();
      const result = check(await server.call(connections[name].client, sql), name);
      if (i >= 20) latency[label][name].push(now() - start);
      latency[label].bytes[name] = Buffer.byteLength(JSON.stringify(result));
    }
  }
}
const rowsBack = (result) => Number(/^(\d+) rows?\b/.exec(result.content[0]?.text ?? '')?.[1]);
const sample = await servers.gatehouse.call(connections.gatehouse.client, QUERIES['1 000 rows']);
if (rowsBack(sample) !== 1000) throw new Error(`expected 1000 rows, got ${rowsBack(sample)}`);
for (const connection of Object.values(connections)) await connection.close();

progress('curated vs free SQL…');
// 2b. A curated query (POSTGRES_QUERIES_FILE) against postgres_query with the same SQL and the
//     same value, on one warm connection, interleaved: what the curated road costs over free SQL.
const CURATED_SQL = 'SELECT id, name, country FROM customers WHERE id = $1';
const queriesFile = join(mkdtempSync(join(tmpdir(), 'bench-queries-')), 'queries.yaml');
writeFileSync(
  queriesFile,
  `queries:\n  - name: customer_by_id\n    title: A customer\n    description: One customer by id.\n    parameters:\n      - { name: id, type: integer, minimum: 1, description: The id. }\n    sql: ${CURATED_SQL}\n`,
);
const curatedConnection = await servers.gatehouse.connect({
  ...oursEnv,
  POSTGRES_QUERIES_FILE: queriesFile,
});
const curated = { curated: [], free: [] };
for (let i = 0; i < CALLS + 20; i++) {
  let start = now();
  check(
    await curatedConnection.client.callTool({ name: 'customer_by_id', arguments: { id: 42 } }),
    'curated',
  );
  if (i >= 20) curated.curated.push(now() - start);
  start = now();
  check(
    await curatedConnection.client.callTool({
      name: 'postgres_query',
      arguments: { sql: CURATED_SQL, params: [42] },
    }),
    'free',
  );
  if (i >= 20) curated.free.push(now() - start);
}
await curatedConnection.close();

progress('a mapped role vs the login role…');
// 2c. A call as the role the role map gives its caller (ADR 0027: SET LOCAL ROLE and the gatehouse
//     settings in the same round trip) against the same call as the login role, warm over stdio,
//     interleaved. The mapped role's on a second copy of the company set up with
//     demo/role-per-caller.sql (its row-level security on customers would hide them from
//     gatehouse_ro); the query reads products, the same rows in both (company.sql is seeded).
const rolesDb = await freshDatabase(cluster.adminUrl, `bench_roles_${process.pid}`);
const tag = `bench_${process.pid}`;
const loginPassword = `pw${process.pid}`;
const owner = new pg.Client({ connectionString: rolesDb.url });
await owner.connect();
await owner.query(
  readFileSync(new URL('../servers/postgres/demo/company.sql', import.meta.url), 'utf8'),
);
await owner.query(
  readFileSync(new URL('../servers/postgres/demo/role-per-caller.sql', import.meta.url), 'utf8')
    .replaceAll('gatehouse_login', `${tag}_login`)
    .replace(/\banalyst\b/g, `${tag}_analyst`)
    .replace(/\bsales_rep\b/g, `${tag}_rep`)
    .replace("'change-me'", `'${loginPassword}'`)
    .replaceAll('"company"', `"${rolesDb.name}"`),
);
await owner.end();
const loginUrl = new URL(rolesDb.url);
loginUrl.username = `${tag}_login`;
loginUrl.password = loginPassword;
const ROLE_SQL = 'SELECT id, name, price FROM products WHERE id = 7';
const roleConnections = {
  mapped: await servers.gatehouse.connect({
    ...oursEnv,
    POSTGRES_URL: loginUrl.toString(),
    POSTGRES_ROLE: `${tag}_analyst`,
  }),
  unmapped: await servers.gatehouse.connect(oursEnv),
};
const roles = { mapped: [], unmapped: [] };
for (let i = 0; i < CALLS + 20; i++) {
  for (const which of i % 2 === 0 ? ['mapped', 'unmapped'] : ['unmapped', 'mapped']) {
    const start = now();
    const result = await roleConnections[which].client.callTool({
      name: 'postgres_query',
      arguments: { sql: ROLE_SQL },
    });
    check(result, which);
    if (rowsBack(result) !== 1)
      throw new Error(`${which}: expected 1 row, got ${rowsBack(result)}`);
    if (i >= 20) roles[which].push(now() - start);
  }
}
for (const connection of Object.values(roleConnections)) await connection.close();
await rolesDb.drop();
{
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  for (const role of ['login', 'analyst', 'rep']) await admin.query(`DROP ROLE ${tag}_${role}`);
  await admin.end();
}

progress('query path vs raw pg…');
// 3. Our query path (parse, policy, read-only transaction, cursor, caps) against raw pg, in
//    process, on the same pool size and role: the overhead of the guarantees themselves.
const logger = createLogger({ level: 'silent' });
const config = loadConfig(PostgresConfigSchema, oursEnv);
const definition = createPostgresServer(config, { logger });
await definition.db.verify();
const service = definition.sql;
const raw = new pg.Pool({ connectionString: readOnlyUrl, max: config.POSTGRES_POOL_SIZE });
// The floor under it: what our transaction makes PostgreSQL execute — BEGIN READ ONLY, the
// per-call settings, the statement, ROLLBACK — sent by raw pg in one round trip (simple protocol),
// with none of our code.
const floorSql = (sql) =>
  `BEGIN READ ONLY; SELECT pg_catalog.set_config('search_path', 'public', true), pg_catalog.set_config('lock_timeout', '1000', true), pg_catalog.set_config('statement_timeout', '30000', true), pg_catalog.set_config('idle_in_transaction_session_timeout', '30000', true); ${sql}; ROLLBACK`;
const path = {};
for (const [label, sql] of Object.entries(QUERIES)) {
  path[label] = { ours: [], raw: [], floor: [] };
  for (let i = 0; i < CALLS + 20; i++) {
    let start = now();
    await service.query(
      { signal: new AbortController().signal, deadline: Date.now() + 30_000, principal: null },
      sql,
      [],
      1000,
    );
    if (i >= 20) path[label].ours.push(now() - start);
    start = now();
    await raw.query(sql);
    if (i >= 20) path[label].raw.push(now() - start);
    start = now();
    await raw.query(floorSql(sql));
    if (i >= 20) path[label].floor.push(now() - start);
  }
}
await raw.end();
await definition.close();

progress('1 000 000 rows…');
// 4. Memory while returning a 1 000 000-row result, each server in a fresh process (our
//    default caps): peak resident set (VmHWM) before and after the call.
function peakRss(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]) * 1024;
}
const memory = {};
for (const [name, server] of Object.entries(servers)) {
  const connection =
    name === 'gatehouse'
      ? await server.connect({ PATH: oursEnv.PATH, POSTGRES_URL: readOnlyUrl, ...BENCH_ENV })
      : await server.connect();
  check(await server.call(connection.client, 'SELECT 1'), name);
  const before = peakRss(connection.pid);
  let after = before;
  // Sample the peak while the call runs: a server that dies of it has no /proc entry after.
  const sampler = setInterval(() => {
    try {
      after = peakRss(connection.pid);
    } catch {
      // exited
    }
  }, 20);
  const clientErrors = [];
  connection.client.onerror = (error) => clientErrors.push(error.message);
  const start = now();
  let result;
  try {
    result = await server.call(connection.client, MILLION);
  } catch (error) {
    result = { failed: [...new Set([...clientErrors, error.message])].join('; ') };
  }
  clearInterval(sampler);
  try {
    after = peakRss(connection.pid);
  } catch {
    // exited
  }
  memory[name] = {
    before,
    after,
    ms: now() - start,
    bytes: result.failed ? 0 : Buffer.byteLength(JSON.stringify(result)),
    error: result.failed ?? (result.isError === true ? 'tool error' : undefined),
  };
  await connection.close().catch(() => undefined);
}
await cluster.stop();

const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MB`;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const lines = [
  `Postgres server benchmark — ${new Date().toISOString()}, node ${process.version}`,
  '',
  `cold start to first answer (${COLD} spawns each, median): gatehouse ${ms(median(cold.gatehouse))}, reference ${ms(median(cold.reference))}, ratio ${(median(cold.gatehouse) / median(cold.reference)).toFixed(2)}`,
  '',
  `warm stdio latency (${CALLS} calls each, interleaved):`,
  ...Object.entries(latency).map(
    ([label, l]) =>
      `  ${label.padEnd(10)} gatehouse median ${ms(median(l.gatehouse))} p99 ${ms(p99(l.gatehouse))} | reference median ${ms(median(l.reference))} p99 ${ms(p99(l.reference))} | ratio ${(median(l.gatehouse) / median(l.reference)).toFixed(2)} | response ${l.bytes.gatehouse} vs ${l.bytes.reference} bytes`,
  ),
  '',
  `curated query vs postgres_query with the same SQL and value (${CALLS} each, interleaved): curated median ${ms(median(curated.curated))} | free median ${ms(median(curated.free))} | ratio ${(median(curated.curated) / median(curated.free)).toFixed(2)}`,
  `a mapped role (POSTGRES_ROLE) vs the login role, same query (${CALLS} each, interleaved): mapped median ${ms(median(roles.mapped))} | unmapped median ${ms(median(roles.unmapped))} | ratio ${(median(roles.mapped) / median(roles.unmapped)).toFixed(2)}`,
  '',
  `query path in process vs raw pg.query (${CALLS} each, interleaved):`,
  ...Object.entries(path).map(
    ([label, p]) =>
      `  ${label.padEnd(10)} ours median ${ms(median(p.ours))} | raw median ${ms(median(p.raw))} | ratio ${(median(p.ours) / median(p.raw)).toFixed(2)} (+${ms(median(p.ours) - median(p.raw))}) | floor (the transaction, raw) ${(median(p.floor) / median(p.raw)).toFixed(2)}`,
  ),
  '',
  'a 1 000 000-row result (default caps for gatehouse):',
  ...Object.entries(memory).map(
    ([name, m]) =>
      `  ${name.padEnd(10)} peak RSS ${mb(m.before)} → ${mb(m.after)} (+${mb(m.after - m.before)}), ${ms(m.ms)}, response ${kb(m.bytes)}${m.error ? ` — FAILED: ${m.error}` : ''}`,
  ),
];
console.log(lines.join('\n'));
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL('./results/postgres.json', import.meta.url),
  JSON.stringify({ cold, latency, curated, roles, path, memory }, null, 1),
);
