// Stateless Streamable HTTP throughput: the Gatehouse core bin (API-key auth, policy, limits,
// the audit trail to a file, the real logger) vs the bare SDK's createMcpHandler, the same no-op
// tool, each in its own process. For 1, 10 and 50 concurrent clients (real SDK clients, one HTTP
// request per call), rounds alternate between the two so drift hits both alike.
// The resident memory of both is sampled throughout. Both run with the servers' bin flags.
// Knobs: BENCH_SECONDS (per round and server, default 1), BENCH_ROUNDS (default 8): short rounds,
// many alternations — on a shared 2-core machine the rate drifts within seconds.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connectHttp } from '@gatehouse/testkit';
import { BENCH_ENV, binFlags, median, memoryOf } from './servers.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const KEY = 'bench-http-api-key-0123456789abcdef';

/** Starts a server process; resolves with its URL (read from a line `pick` recognises). */
function start(script, env, pick, stream) {
  const child = spawn(process.execPath, [...binFlags('github'), here(script)], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start`)), 15_000);
    createInterface({ input: child[stream] }).on('line', (line) => {
      const url = pick(line);
      if (url !== undefined) {
        clearTimeout(timer);
        resolve({ url, child });
      }
    });
  });
}

const audit = mkdtempSync(join(tmpdir(), 'bench-http-'));
const core = await start(
  './core-stdio.mjs',
  {
    GATEHOUSE_TRANSPORT: 'http',
    GATEHOUSE_PORT: '0',
    GATEHOUSE_AUTH: 'api_key',
    GATEHOUSE_API_KEYS: JSON.stringify([
      {
        id: 'bench',
        sha256: createHash('sha256').update(KEY).digest('hex'),
        principal: 'bench',
        scopes: ['*'],
      },
    ]),
    GATEHOUSE_AUDIT_SINKS: 'file',
    GATEHOUSE_AUDIT_FILE: join(audit, 'audit.jsonl'),
    ...BENCH_ENV,
    GATEHOUSE_MAX_INFLIGHT: '10000',
    GATEHOUSE_LOG_LEVEL: 'info', // 'server started' carries the URL
  },
  (line) => {
    try {
      const parsed = JSON.parse(line);
      return parsed.msg === 'server started' ? parsed.url : undefined;
    } catch {
      return undefined;
    }
  },
  'stderr',
);
const bare = await start(
  './bare-http.mjs',
  {},
  (line) => (line.startsWith('http') ? line : undefined),
  'stdout',
);

/** Calls per second of `clients` concurrent clients for SECONDS. */
async function measure(url, clients, headers) {
  const connections = await Promise.all(
    Array.from({ length: clients }, () =>
      connectHttp(url, { era: 'legacy', ...(headers ? { headers } : {}) }),
    ),
  );
  let calls = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    connections.map(async ({ client }) => {
      while (performance.now() < until) {
        await client.callTool({ name: 'noop', arguments: {} });
        calls++;
      }
    }),
  );
  await Promise.all(connections.map((c) => c.close()));
  return calls / SECONDS;
}

// Memory of both servers while they serve (every 100 ms): the steady level and the peak.
const rss = { core: [], bare: [] };
const sampler = setInterval(() => {
  rss.core.push(memoryOf(core.child.pid).rss);
  rss.bare.push(memoryOf(bare.child.pid).rss);
}, 100);

const rows = [];
for (const clients of [1, 10, 50]) {
  const rates = { core: [], bare: [] };
  await measure(core.url, clients, { authorization: `Bearer ${KEY}` }); // warm up
  await measure(bare.url, clients);
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? ['bare', 'core'] : ['core', 'bare']) {
      rates[name].push(
        name === 'core'
          ? await measure(core.url, clients, { authorization: `Bearer ${KEY}` })
          : await measure(bare.url, clients),
      );
    }
  }
  rows.push({
    clients,
    core_calls_per_s: Math.round(median(rates.core)),
    bare_calls_per_s: Math.round(median(rates.bare)),
    'ratio core/bare': Number((median(rates.core) / median(rates.bare)).toFixed(3)),
    core_range: `${Math.round(Math.min(...rates.core))}–${Math.round(Math.max(...rates.core))}`,
    rounds: ROUNDS,
  });
}
clearInterval(sampler);
const mb = (kb) => Math.round(kb / 1024);
const memory = Object.fromEntries(
  Object.entries({ core, bare }).map(([name, server]) => [
    name,
    {
      steady_rss_mb: mb(median(rss[name].slice(Math.floor(rss[name].length / 3)))),
      peak_rss_mb: mb(memoryOf(server.child.pid).hwm),
      samples: rss[name].length,
    },
  ]),
);
core.child.kill('SIGTERM');
bare.child.kill('SIGTERM');
console.table(rows);
console.table(memory);
mkdirSync(here('./results'), { recursive: true });
writeFileSync(
  here('./results/http.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds: SECONDS, rows, memory }, null, 2)}\n`,
);
