// One command for the performance table (issue 14): runs the benchmarks in turn — each compares
// against its baseline interleaved in the same run — then prints one table of every row: ours,
// the baseline, the ratio, n and the spread (p10–p90 of ours), and writes it into bench/README.md
// between the `bench-table` markers (a full run only: a short run prints its table and leaves the
// README alone).
//   npm run bench            the full run (the benchmarks' default sample counts)
//   npm run bench -- --short  a quick run with fewer samples (what CI can afford)
//   npm run bench -- github   one benchmark (bench/github.mjs), its own output; `-- all` every one
// Rows no benchmark measures yet say so; a benchmark that fails fails the command.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { shebangFlags } from '../scripts/client-config.mjs';
import { quantile } from './stats.mjs';
import { verdict } from './verdict.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const short = process.argv.includes('--short');
const knobs = short
  ? {
      BENCH_CALLS: '300',
      BENCH_COLD: '5',
      BENCH_SECONDS: '1',
      BENCH_ROUNDS: '2',
      BENCH_LOAD_CALLS: '20000',
    }
  : {};

/** Runs one benchmark file of this folder; a failure fails the command. */
function bench(file, stdout = 'ignore') {
  process.stderr.write(`bench: ${file}${short ? ' (short)' : ''}…\n`);
  // The node flags of the file's first line (`#!/usr/bin/env -S node --liftoff-only`), as a bin's.
  const run = spawnSync(process.execPath, [...shebangFlags(here(`./${file}`)), here(`./${file}`)], {
    stdio: ['ignore', stdout, 'inherit'],
    env: { ...process.env, ...knobs },
  });
  if (run.status !== 0) {
    process.stderr.write(`bench: ${file} failed (exit ${run.status})\n`);
    process.exit(1);
  }
}

// `npm run bench -- github slack` runs those benchmarks and prints what they print; `-- all`
// runs every one: the core's five, and bench/<id>.mjs for every servers/<id> that has one — a
// fifth server's benchmark is found by its folder's name, with no script to add anywhere.
const named = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (named.length > 0) {
  const all = [
    ...['core-overhead', 'http', 'memory', 'audit', 'guard', 'listing', 'identity'],
    ...readdirSync(here('../servers')).filter((id) => existsSync(here(`./${id}.mjs`))),
  ];
  const chosen = named.includes('all') ? all : named;
  const unknown = chosen.filter((n) => !all.includes(n));
  if (unknown.length > 0) {
    process.stderr.write(
      `bench: no benchmark named ${unknown.join(', ')} (there are: ${all.join(', ')}, all)\n`,
    );
    process.exit(2);
  }
  for (const name of chosen) bench(`${name}.mjs`, 'inherit');
  process.exit(0);
}

for (const file of [
  'core-overhead.mjs',
  'postgres.mjs',
  'http.mjs',
  'memory.mjs',
  'listing.mjs',
  'identity.mjs',
])
  bench(file);

const results = (name) => JSON.parse(readFileSync(here(`./results/${name}.json`), 'utf8'));
const ms = (n) => `${n < 10 ? n.toFixed(2) : n.toFixed(0)} ms`;
const rows = [];
/** A row from two sample arrays (ms): medians, ratio, n, p10–p90 of ours. */
function timed(what, ours, base, target, unit = ms) {
  const [o, b] = [quantile(ours, 0.5), quantile(base, 0.5)];
  rows.push({
    what,
    ours: unit(o),
    baseline: unit(b),
    ratio: (o / b).toFixed(2),
    n: ours.length,
    spread: `${unit(quantile(ours, 0.1))}–${unit(quantile(ours, 0.9))}`,
    target,
  });
}

const pg = results('postgres');
for (const size of ['1 row', '1 000 rows']) {
  const { ours, raw } = pg.path[size];
  const path = size === '1 row' ? '≤ 1.2×' : '≤ 1.1×';
  timed(`Postgres ${size} query path vs raw pg.query, in process`, ours, raw, path);
  timed(
    `floor under the row above: BEGIN READ ONLY + the call's settings + the statement + ROLLBACK, raw pg in one round trip, vs raw pg.query (${size})`,
    pg.path[size].floor,
    raw,
    '(a floor: no target)',
  );
  const { gatehouse, reference } = pg.latency[size];
  const warm = `Postgres warm call over stdio vs server-postgres 0.6.2, ${size}`;
  timed(warm, gatehouse, reference, '≤ 1.0×');
}
timed(
  'Postgres curated query (POSTGRES_QUERIES_FILE) vs postgres_query with the same SQL and value, warm over stdio',
  pg.curated.curated,
  pg.curated.free,
  '≤ 1.05×',
);
timed(
  'Postgres call as a mapped role (SET LOCAL ROLE and the gatehouse settings, ADR 0027) vs as the login role, same query, warm over stdio',
  pg.roles.mapped,
  pg.roles.unmapped,
  '≤ 1.1×',
);
timed(
  'cold start to the first answer over stdio vs server-postgres 0.6.2',
  pg.cold.gatehouse,
  pg.cold.reference,
  '≤ 1.0×',
);

const core = results('core-overhead');
for (const row of core.rows) {
  if (row.what !== undefined) {
    rows.push({
      what: row.what,
      ours: ms(row.core_median_ms),
      baseline: ms(row.bare_median_ms),
      ratio: row['ratio core/bare (median)'].toFixed(2),
      n: row.samples,
      spread: `p99 ${ms(row.core_p99_ms)}`,
      target: '(a floor: no target)',
    });
    continue;
  }
  const target = row.benchmark.startsWith('cold start')
    ? '≤ 1.1×'
    : row.benchmark.includes('stdio')
      ? '≤ 1.25×'
      : '≤ 1.5×';
  rows.push({
    what: `${row.benchmark}: core vs bare SDK v2`,
    ours: ms(row.core_median_ms),
    baseline: ms(row.bare_median_ms),
    ratio: row['ratio core/bare (median)'].toFixed(2),
    n: row.samples,
    spread: `p99 ${ms(row.core_p99_ms)}`,
    target,
  });
}

for (const size of ['1 row', '1 000 rows']) {
  const { gatehouse, reference } = pg.latency[size].bytes;
  rows.push({
    what: `bytes the model receives, Postgres ${size} vs server-postgres 0.6.2`,
    ours: `${gatehouse} B`,
    baseline: `${reference} B`,
    ratio: (gatehouse / reference).toFixed(2),
    n: 1,
    spread: '',
    target: 'never bigger',
  });
}

// What every conversation carries before a call: tools/list (as listed by default, write tools
// included) against the reference server of its kind listed in the same run (bench/listing.mjs).
for (const { id, ours, peer, cited } of results('listing').rows) {
  const against = cited ?? peer;
  if (against === undefined) continue;
  rows.push({
    what: `tools/list bytes, ${id} (${ours.tools} tools) vs ${against.name} (${against.tools} tools)`,
    ours: `${ours.bytes} B`,
    baseline: `${against.bytes} B`,
    ratio: (ours.bytes / against.bytes).toFixed(2),
    n: 1,
    spread: `+ ${ours.instructions} B instructions; ${Math.round(ours.bytes / ours.tools)} B/tool vs ${Math.round(against.bytes / against.tools)}${cited && peer ? `; ${peer.name} ${peer.bytes} B (${peer.tools} tool${peer.tools === 1 ? '' : 's'})` : ''}`,
    target: '≤ 1.0×',
  });
}

for (const row of results('http').rows) {
  rows.push({
    what: `stateless HTTP, API-key auth, audit to a file vs bare createMcpHandler, ${row.clients} client(s) (calls/s)`,
    ours: `${row.core_calls_per_s}/s`,
    baseline: `${row.bare_calls_per_s}/s`,
    ratio: row['ratio core/bare'].toFixed(2),
    n: row.rounds,
    spread: `${row.core_range}/s`,
    target: '≥ 1.0×',
  });
}

// Acting as each person (ADR 0026) against acting as the service: the same call, same run, per
// SaaS server.
{
  const { samples } = results('identity');
  const vendors = { github: 'GitHub', slack: 'Slack', jira: 'Jira' };
  for (const [id, vendor] of Object.entries(vendors)) {
    if (samples[id] === undefined) continue;
    timed(
      `${vendor} warm call over HTTP acting as a linked person (user mode) vs as the service credential`,
      samples[id].user,
      samples[id].service,
      '≤ 1.1×',
    );
  }
}

/** Memory rows: ours and the baseline's, in MB, one per measure. */
function memoryRows(label, core, bare, measures) {
  for (const [what, key, target] of measures) {
    rows.push({
      what: `${label}: ${what}`,
      ours: `${core[key]} MB`,
      baseline: `${bare[key]} MB`,
      ratio: bare[key] === 0 ? '' : (core[key] / bare[key]).toFixed(2),
      n: core.samples,
      spread: '',
      target,
    });
  }
}
const steady = ['steady RSS', 'steady_rss_mb', '≤ 150 MB'];
const peak = ['peak RSS', 'peak_rss_mb', '≤ 200 MB'];
const memory = Object.fromEntries(results('memory').rows.map((r) => [r.server, r]));
memoryRows(
  `memory over stdio, ${memory.core.calls} calls, 16 in flight, vs the bare SDK server`,
  memory.core,
  memory.bare,
  [
    steady,
    peak,
    ['RSS growth, last tenth vs the middle', 'growth_mb', 'nothing growing (≤ 10 MB)'],
  ],
);
const httpMemory = results('http').memory;
memoryRows(
  'memory over HTTP, the rounds above (1–50 clients), vs bare createMcpHandler',
  httpMemory.core,
  httpMemory.bare,
  [steady, peak],
);

const header = ['what', 'ours', 'baseline', 'ratio', 'n', 'spread (ours)', 'target', 'met'];
const cell = (s) => String(s).replace(/\|/g, '\\|');
const mark = { met: '✓', missed: '✗ missed', '': '' };
const table = [
  `| ${header.join(' | ')} |`,
  `| ${header.map(() => '---').join(' | ')} |`,
  ...rows.map(
    (r) =>
      `| ${[r.what, r.ours, r.baseline, r.ratio, r.n, r.spread, r.target, mark[verdict(r)]].map(cell).join(' | ')} |`,
  ),
].join('\n');
const missed = rows.filter((r) => verdict(r) === 'missed');
const judged = rows.filter((r) => verdict(r) !== '');
const summary =
  missed.length === 0
    ? `All ${judged.length} rows with a target meet it.`
    : `${missed.length} of ${judged.length} rows with a target miss it:\n${missed.map((r) => `- ${r.what}: ${r.ratio === '' ? r.ours : `${r.ratio}×`} (target ${r.target})`).join('\n')}`;
const stamp = `Last run: ${new Date().toISOString().slice(0, 10)}, Node ${process.version}${short ? ', short mode' : ''}.`;
process.stdout.write(`${table}\n\n${summary}\n\n${stamp}\n`);

const readme = here('./README.md');
const text = readFileSync(readme, 'utf8');
const start = '<!-- bench-table:start -->';
const end = '<!-- bench-table:end -->';
// A short run's numbers have too few samples to stand as the table: printed, never written.
if (short) {
  process.stderr.write('bench: short mode — bench/README.md keeps the last full run\n');
} else if (text.includes(start) && text.includes(end)) {
  const updated = `${text.slice(0, text.indexOf(start) + start.length)}\n\n${table}\n\n${summary}\n\n${stamp}\n\n${text.slice(text.indexOf(end))}`;
  // Formatted as the repository's Prettier check expects.
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(readme)) ?? {};
  writeFileSync(readme, await prettier.format(updated, { ...options, filepath: readme }));
  process.stderr.write('bench: the table is written into bench/README.md\n');
}
