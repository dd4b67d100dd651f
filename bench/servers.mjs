// The two servers the benchmark compares: the same no-op tool on a bare SDK v2 McpServer (bare.mjs) and on
// the Gatehouse core (policy, validation, sanitiser and audit included).
import { baseConfigSchema, loadConfig } from '@gatehouse/core';
import {
  createLogger,
  createRuntime,
  createServerFactory,
  scrubRecordText,
} from '@gatehouse/core/runtime';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { AuditLog, fdSink } from '@gatehouse/audit';
import { coreDefinition } from './core-definition.mjs';
import { median, p99 } from './stats.mjs';

export { bareFactory } from './bare.mjs';
export { coreDefinition, median, p99 };

/** Limits high enough that a benchmark measures the pipeline, not the rate limiter's refusals. */
export const BENCH_ENV = {
  GATEHOUSE_RATE_READ_PER_MIN: '1000000',
  GATEHOUSE_MAX_CONCURRENT_PER_PRINCIPAL: '10000',
};

/** The audit log the benchmarks use: the real hash chain and secret scrub, written to /dev/null. */
export function devNullAudit() {
  const fd = openSync('/dev/null', 'a');
  return new AuditLog({
    sinks: [fdSink(fd, 'dev-null')],
    service: { name: 'core', version: '1.0.0' },
    scrub: scrubRecordText,
  });
}

/**
 * An audit log that discards every record: the core still builds each one (the pipeline's own
 * cost), nothing seals or writes it. For the floor rows of bench/core-overhead.mjs only.
 */
export function discardingAudit() {
  return {
    failures: new Map(),
    append: () => undefined,
    flush: () => undefined,
    checkpoint: () => undefined,
    close: () => undefined,
    closeWitnesses: async () => undefined,
  };
}

/** The bin `command` of an installed reference package (`bin` as a map, or the one bin). */
export function referenceBin(name, command) {
  const manifest = createRequire(import.meta.url).resolve(`${name}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8'));
  return join(dirname(manifest), typeof bin === 'string' ? bin : bin[command]);
}

/** The core factory with a real logger and audit trail (hash-chained, to /dev/null). */
export function coreFactory(audit = devNullAudit()) {
  const config = loadConfig(baseConfigSchema, BENCH_ENV);
  const logger = createLogger({ dest: '/dev/null' });
  return createServerFactory(coreDefinition, createRuntime(config, logger, { audit }));
}

/**
 * Ours against a reference server, both over stdio against the same fake: cold starts (spawn →
 * the first answer of `first`), then warm latency of each call, interleaved, and the bytes the
 * model gets from each call's first answer. `servers`: { gatehouse, reference }, each with
 * `connect()` and one function per call name taking the client.
 */
const failed = (result, name) => {
  if (result.isError) {
    throw new Error(
      `${name}: ${result.content
        .map((c) => c.text ?? '')
        .join('\n')
        .slice(0, 300)}`,
    );
  }
  return result;
};

/** The report line comparing what the model reads from one call of both servers. */
export const bytesLine = (sizes, call, what) =>
  `${what}, text: the reference sends ${(sizes[`${call}/reference`].text / sizes[`${call}/gatehouse`].text).toFixed(1)}× the bytes of gatehouse's`;

export async function compareOverStdio({
  servers,
  first,
  calls,
  cold: spawns,
  warm,
  check = failed,
}) {
  const now = () => performance.now();
  process.stderr.write('cold starts…\n');
  const cold = { gatehouse: [], reference: [] };
  for (let i = 0; i < spawns; i++) {
    for (const [name, s] of Object.entries(servers)) {
      const start = now();
      const c = await s.connect();
      check(await s[first](c.client), name);
      cold[name].push(now() - start);
      await c.close();
    }
  }
  process.stderr.write('warm latency…\n');
  const connections = {};
  for (const [name, s] of Object.entries(servers)) connections[name] = await s.connect();
  const latency = {};
  const sizes = {};
  for (const call of calls) {
    latency[call] = { gatehouse: [], reference: [] };
    for (let i = 0; i < warm + 20; i++) {
      for (const [name, s] of Object.entries(servers)) {
        const start = now();
        const result = check(await s[call](connections[name].client), name);
        if (i >= 20) latency[call][name].push(now() - start);
        if (i === 0) {
          const text = result.content.map((c) => c.text ?? '').join('\n');
          sizes[`${call}/${name}`] = {
            text: Buffer.byteLength(text),
            whole: Buffer.byteLength(
              JSON.stringify({
                content: result.content,
                structuredContent: result.structuredContent,
              }),
            ),
          };
        }
      }
    }
  }
  for (const c of Object.values(connections)) await c.close();
  return { cold, latency, sizes };
}

const fmt = (n) => `${n.toFixed(2)} ms`;

/**
 * Prints a comparison from {@link compareOverStdio} and saves it to bench/results/<name>.json.
 * `labels` names each call for the latency lines; `extra` lines end the report.
 */
export function reportComparison(
  name,
  title,
  { cold, latency, sizes },
  { first, labels, extra = [] },
) {
  const ratio = (a, b) => (median(a) / median(b)).toFixed(2);
  const lines = [
    `${title} — ${new Date().toISOString()}, node ${process.version}`,
    '',
    `cold start to first ${first} answer (${cold.gatehouse.length} spawns each, median): gatehouse ${fmt(median(cold.gatehouse))}, reference ${fmt(median(cold.reference))}, ratio ${ratio(cold.gatehouse, cold.reference)}`,
    '',
    `warm stdio latency (${Object.values(latency)[0]?.gatehouse.length ?? 0} calls each, interleaved):`,
    ...Object.entries(latency).map(
      ([call, l]) =>
        `  ${(labels[call] ?? call).padEnd(16)} gatehouse median ${fmt(median(l.gatehouse))} p99 ${fmt(p99(l.gatehouse))} | reference median ${fmt(median(l.reference))} p99 ${fmt(p99(l.reference))} | ratio ${ratio(l.gatehouse, l.reference)}`,
    ),
    '',
    'what the model gets (bytes): text content / whole result incl. structuredContent',
    ...Object.entries(sizes).map(([k, v]) => `  ${k.padEnd(20)} ${v.text} / ${v.whole}`),
    ...extra.map((line) => `  ${line}`),
  ];
  console.log(lines.join('\n'));
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL(`./results/${name}.json`, import.meta.url),
    JSON.stringify({ cold, latency, sizes }, null, 1),
  );
}

/**
 * The node flags every server bin starts with (its first line: the heap sizing of ADR 0014, and
 * the server's own gatehouse.nodeFlags), so the benchmarks' own server scripts — and the bare SDK
 * servers they are compared with — run the way a deployed server does. The bin is written by the
 * build (scripts/bundle.mjs), which the benchmarks run first.
 */
export function binFlags(server) {
  const first = readFileSync(
    new URL(`../servers/${server}/dist/index.js`, import.meta.url),
    'utf8',
  ).split('\n', 1)[0];
  return (/^#!\S*env\s+-S\s+node\s*(.*)$/.exec(first)?.[1] ?? '').split(/\s+/).filter(Boolean);
}

/** VmRSS and VmHWM (peak) of a process, in kB. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}
