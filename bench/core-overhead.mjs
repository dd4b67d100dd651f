// Benchmark: what the Gatehouse core pipeline costs per call, against a bare SDK v2 server
// measured in the same run (ratios, not absolute times). Run with `npm run bench`.
//   BENCH_CALLS (default 3000) calls per server and transport, BENCH_COLD (default 20) spawns.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connectInMemory, connectStdio, initializeRequest } from '@gatehouse/testkit';
import { bundle } from '../scripts/bundle.mjs';
import { BENCH_ENV, bareFactory, coreFactory, discardingAudit } from './servers.mjs';
import { quantile } from './stats.mjs';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const COLD = Number(process.env.BENCH_COLD ?? 20);
const ROUNDS = 10;
const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const scripts = {
  bare: here('./bare-stdio.mjs'),
  core: here('./core-stdio.mjs'),
  sdk1: here('./sdk1-stdio.mjs'),
};

async function timeCalls(client, n, into) {
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const result = await client.callTool({ name: 'noop', arguments: {} });
    into.push(performance.now() - t0);
    if (result.isError) throw new Error('the no-op tool failed');
  }
}

/** Interleaves the two servers in rounds so drift (GC, CPU frequency) hits both alike. */
async function compareCalls(connect, names = ['bare', 'core']) {
  const connections = {};
  const samples = {};
  for (const name of names) {
    connections[name] = await connect(name);
    samples[name] = [];
    await timeCalls(connections[name].client, 200, []); // warm-up
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of r % 2 ? [...names].reverse() : names) {
      await timeCalls(connections[name].client, CALLS / ROUNDS, samples[name]);
    }
  }
  for (const c of Object.values(connections)) await c.close();
  return samples;
}

/** Spawn → answer to `initialize` on stdout, in milliseconds. */
function coldStart(script) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'ignore'], env: {} });
    createInterface({ input: child.stdout }).once('line', (line) => {
      const elapsed = performance.now() - t0;
      if (!line.includes('"protocolVersion"')) reject(new Error(`unexpected first line: ${line}`));
      child.kill('SIGKILL');
      resolve(elapsed);
    });
    child.on('error', reject);
    child.stdin.write(`${JSON.stringify(initializeRequest(1, 'bench'))}\n`);
  });
}

const rows = [];
/** `samples.core` against `samples.bare`; `what` names a floor row (another pair than those). */
function report(label, samples, what) {
  const bare = quantile(samples.bare, 0.5);
  const core = quantile(samples.core, 0.5);
  const row = {
    benchmark: label,
    bare_median_ms: +bare.toFixed(4),
    core_median_ms: +core.toFixed(4),
    bare_p99_ms: +quantile(samples.bare, 0.99).toFixed(4),
    core_p99_ms: +quantile(samples.core, 0.99).toFixed(4),
    'ratio core/bare (median)': +(core / bare).toFixed(3),
    samples: samples.core.length,
    ...(what === undefined ? {} : { what }),
  };
  rows.push(row);
  console.log(
    `${label}: median bare ${row.bare_median_ms} ms, core ${row.core_median_ms} ms → ratio ${row['ratio core/bare (median)']}`,
  );
}

console.log(
  `node ${process.version}; ${CALLS} calls per server and transport; ${COLD} cold starts each`,
);

// In memory, a server records every call before it answers (ADR 0014: only the bins, whose
// answers leave the process, write a read's record after the answer). Beside the core as it
// runs, the same core with an audit log that discards every record (`unrecorded`): the rows
// below the two main ones split the core's cost into the pipeline and the record.
const factories = {
  bare: bareFactory,
  core: () => coreFactory(),
  unrecorded: () => coreFactory(discardingAudit()),
};
for (const era of ['legacy', 'modern']) {
  const samples = await compareCalls(
    (name) => connectInMemory(factories[name](), { era }),
    ['bare', 'core', 'unrecorded'],
  );
  report(`tools/call no-op, in memory (${era} era)`, samples);
  report(
    `tools/call no-op, in memory (${era} era), every record discarded (floor)`,
    { bare: samples.bare, core: samples.unrecorded },
    `in memory (${era} era): the pipeline without its audit record (built, not sealed or written) vs the bare SDK`,
  );
  report(
    `tools/call no-op, in memory (${era} era): the audit record (floor)`,
    { bare: samples.unrecorded, core: samples.core },
    `in memory (${era} era): the audit record — the core vs the same core discarding its records (sealing: canonical JSON, SHA-256 chain; the secret scrub; the write, before the answer)`,
  );
}
report(
  'tools/call no-op, stdio child process',
  await compareCalls((name) =>
    connectStdio(process.execPath, [scripts[name]], {
      era: 'legacy',
      stderr: 'ignore',
      env: BENCH_ENV,
    }),
  ),
);

// The floor under the reference comparisons: SDK v2's own stdio round trip against SDK 1.0.1's,
// the SDK server-postgres 0.6.2 is built on (sdk1-stdio.mjs), the same no-op, no Gatehouse code.
const sdks = await compareCalls(
  (name) => connectStdio(process.execPath, [scripts[name]], { era: 'legacy', stderr: 'ignore' }),
  ['sdk1', 'bare'],
);
report(
  'tools/call no-op, stdio child process (floor)',
  { bare: sdks.sdk1, core: sdks.bare },
  'floor under the Postgres reference rows: tools/call no-op over stdio, bare SDK v2 vs SDK 1.0.1',
);

// Cold start as the servers ship: their bins load a bundle (scripts/bundle.mjs), so the core's
// server script is bundled the same way here; the unbundled one is measured beside it. The
// baseline is a bare SDK server as its author would run it (bench/bare.mjs: SDK and zod only).
const bundled = mkdtempSync(join(tmpdir(), 'bench-bundle-'));
await bundle(scripts.core, bundled);
const coldScripts = { ...scripts, bundled: join(bundled, 'core-stdio.js') };
const cold = { bare: [], core: [], bundled: [], sdk1: [] };
for (let i = 0; i < COLD; i++) {
  for (const name of i % 2
    ? ['sdk1', 'bundled', 'core', 'bare']
    : ['bare', 'core', 'bundled', 'sdk1'])
    cold[name].push(await coldStart(coldScripts[name]));
}
report('cold start: spawn → initialize answer, bundled as the bins ship', {
  bare: cold.bare,
  core: cold.bundled,
});
report('cold start: spawn → initialize answer, unbundled', { bare: cold.bare, core: cold.core });
report(
  'cold start (floor)',
  { bare: cold.sdk1, core: cold.bare },
  'floor under the Postgres reference rows: cold start to the initialize answer, bare SDK v2 vs SDK 1.0.1',
);

console.table(rows);
mkdirSync(here('./results'), { recursive: true });
writeFileSync(
  here('./results/core-overhead.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, calls: CALLS, cold: COLD, rows }, null, 2)}\n`,
);
