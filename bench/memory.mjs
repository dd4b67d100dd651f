// Memory under a sustained load over stdio: the Gatehouse core bin (policy, limits, audit trail
// to stderr — discarded here — the real logger) vs the bare SDK server, the same no-op tool,
// BENCH_LOAD_CALLS calls (default 100 000) with 16 in flight. RSS is sampled from /proc every
// 50 ms: the peak (VmHWM), the steady level (median of the last third) and the growth (the last
// tenth against the third before it: a leak shows as growth). Both run with the servers' bin
// flags (binFlags: the heap sizing of ADR 0014).
import { writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectStdio } from '@gatehouse/testkit';
import { BENCH_ENV, binFlags, median, memoryOf as memory } from './servers.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const CALLS = Number(process.env.BENCH_LOAD_CALLS ?? 100_000);
const IN_FLIGHT = 16;
const mb = (kb) => Math.round(kb / 1024);

async function load(name, script) {
  const connection = await connectStdio(process.execPath, [...binFlags('github'), here(script)], {
    env: BENCH_ENV,
    stderr: 'ignore',
  });
  const samples = [];
  const sampler = setInterval(() => samples.push(memory(connection.pid).rss), 50);
  let sent = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (sent < CALLS) {
        sent++;
        await connection.client.callTool({ name: 'noop', arguments: {} });
      }
    }),
  );
  clearInterval(sampler);
  const { hwm } = memory(connection.pid);
  await connection.close();
  const n = samples.length;
  const steady = median(samples.slice(Math.floor((2 * n) / 3)));
  const late = median(samples.slice(Math.floor(0.9 * n)));
  const earlier = median(samples.slice(Math.floor(0.55 * n), Math.floor(0.65 * n)));
  return {
    server: name,
    calls: CALLS,
    peak_rss_mb: mb(hwm),
    steady_rss_mb: mb(steady),
    growth_mb: mb(late - earlier),
    samples: n,
  };
}

const rows = [await load('core', './core-stdio.mjs'), await load('bare', './bare-stdio.mjs')];
console.table(rows);
mkdirSync(here('./results'), { recursive: true });
writeFileSync(
  here('./results/memory.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, rows }, null, 2)}\n`,
);
