// Benchmark: what the audit trail costs. Run with `npm run bench -- audit` (builds first).
//   1. per call: the core pipeline with its audit trail vs the same pipeline with audit discarded
//      (in memory, same run, interleaved) → ratio;
//   2. records per second into each sink (hash chain + JSON line + synchronous write);
//   3. `gatehouse-audit verify` throughput in records per second, and its peak memory.
// Knobs: BENCH_CALLS (default 3000), BENCH_RECORDS (default 100000).
import { execSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuditLog, fdSink, fileSink, readLines, verifyLines } from '@gatehouse/audit';
import { connectInMemory } from '@gatehouse/testkit';
import { coreFactory, devNullAudit, median } from './servers.mjs';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000);
const ROUNDS = 10;
const rows = [];

// 1. Per-call cost of auditing.
const discard = { append() {}, failures: new Map() };
const conns = {
  'no audit': await connectInMemory(coreFactory(discard)),
  audited: await connectInMemory(coreFactory(devNullAudit())),
};
const samples = { 'no audit': [], audited: [] };
for (const c of Object.values(conns))
  for (let i = 0; i < 300; i++) await c.client.callTool({ name: 'noop', arguments: {} });
for (let r = 0; r < ROUNDS; r++) {
  for (const name of r % 2 ? ['audited', 'no audit'] : ['no audit', 'audited']) {
    for (let i = 0; i < CALLS / ROUNDS; i++) {
      const t0 = performance.now();
      await conns[name].client.callTool({ name: 'noop', arguments: {} });
      samples[name].push(performance.now() - t0);
    }
  }
}
for (const c of Object.values(conns)) await c.close();
const base = median(samples['no audit']);
const audited = median(samples.audited);
rows.push({
  benchmark: 'tools/call no-op: audited vs not (median ms)',
  baseline: +base.toFixed(4),
  measured: +audited.toFixed(4),
  ratio: +(audited / base).toFixed(3),
  note: `+${((audited - base) * 1000).toFixed(1)} µs per call`,
});

// 2. Records per second into each sink.
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-bench-'));
const entry = () => ({
  '@timestamp': new Date().toISOString(),
  event: {
    id: randomUUID(),
    kind: 'event',
    category: ['api'],
    type: ['access'],
    action: 'tools/call',
    outcome: 'success',
    reason: 'ok',
    duration: 1234567,
  },
  user: { id: 'alice@example.com' },
  auth: { method: 'oauth', credential_id: 'jti-1234' },
  mcp: {
    request_id: 42,
    era: 'modern',
    transport: 'http',
    name: 'github_get_issue',
    protocol_version: '2026-07-28',
  },
  tool: {
    name: 'github_get_issue',
    definition_hash: `sha256:${'a'.repeat(64)}`,
    access: 'read',
    read_only: true,
  },
  target: { resource: 'github:acme/api#45' },
  args: { shape: { repo: 'string', number: 'number' }, sha256: `sha256:${'b'.repeat(64)}` },
  result: { bytes: 2048, items: 1, sha256: `sha256:${'c'.repeat(64)}` },
  policy: { decision: 'allow', rule: 'read_tool' },
});
function rate(label, sinks, n = RECORDS) {
  const log = new AuditLog({
    sinks,
    service: { name: 'bench', version: '1' },
    checkpointEvery: 1000,
  });
  const t0 = performance.now();
  for (let i = 0; i < n; i++) log.append(entry());
  log.close();
  const seconds = (performance.now() - t0) / 1000;
  rows.push({
    benchmark: `append → ${label} (records/s)`,
    measured: Math.round(n / seconds),
    note: `${((seconds / n) * 1e6).toFixed(2)} µs per record`,
  });
}
const devNull = openSync('/dev/null', 'a');
rate('/dev/null (hash + serialise + write)', [fdSink(devNull, 'null')]);
const fifo = join(dir, 'pipe');
execSync(`mkfifo ${fifo}`);
const reader = spawn('sh', ['-c', `cat ${fifo} > /dev/null`], { stdio: 'ignore' });
const pipeFd = openSync(fifo, 'w');
rate('a pipe read by another process (stdout/stderr in a container)', [fdSink(pipeFd, 'pipe')]);
rate('append-only file', [
  fileSink({ path: join(dir, 'audit.jsonl'), maxBytes: 1 << 30, daily: false }),
]);
rate('file + pipe at once', [
  fileSink({ path: join(dir, 'audit2.jsonl'), maxBytes: 1 << 30, daily: false }),
  fdSink(pipeFd, 'pipe'),
]);
closeSync(pipeFd);
reader.kill();

// 3. verify throughput (the file written above).
const file = join(dir, 'audit.jsonl');
const t0 = performance.now();
const report = await verifyLines(readLines([file]), { allowOpenTail: true });
const seconds = (performance.now() - t0) / 1000;
if (!report.intact) throw new Error(`benchmark log did not verify: ${report.damage?.message}`);
rows.push({
  benchmark: 'gatehouse-audit verify (records/s)',
  measured: Math.round(report.records / seconds),
  note: `${(statSync(file).size / 1e6 / seconds).toFixed(1)} MB/s; peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB (whole benchmark process)`,
});

console.table(rows);
const here = (f) => fileURLToPath(new URL(f, import.meta.url));
mkdirSync(here('./results'), { recursive: true });
writeFileSync(
  here('./results/audit.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, calls: CALLS, records: RECORDS, rows }, null, 2)}\n`,
);
rmSync(dir, { recursive: true, force: true });
