// Benchmark: what the guard costs. Run with `npm run bench -- guard` (builds first).
//   1. sanitiser throughput (MB/s) on a realistic mix of tool output, and on plain ASCII;
//   2. per call: a read tool returning a 4 KB issue through the core with the full guard
//      (scopes, allow-list, rate and concurrency limits, sanitiser, size budget) vs the same core
//      with a permissive policy and no limits (the sanitiser cannot be switched off: its cost is
//      measured in 1.) vs a bare SDK server returning the same text → ratios.
// Knobs: BENCH_CALLS (default 3000), BENCH_MB (default 8).
import { createWriteStream } from 'node:fs';
import {
  READ_ONLY_ANNOTATIONS,
  baseConfigSchema,
  defineServer,
  defineTool,
  loadConfig,
  sanitizeText,
} from '@gatehouse/core';
import { createLogger, createRuntime, createServerFactory } from '@gatehouse/core/runtime';
import { McpServer } from '@modelcontextprotocol/server';
import { connectInMemory } from '@gatehouse/testkit';
import * as z from 'zod';
import { median } from './servers.mjs';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const MB = Number(process.env.BENCH_MB ?? 8);
const rows = [];

// A realistic issue body: markdown, code, a stack trace, links, some emoji and non-Latin text,
// and (in one of eight) a smuggling attempt.
const ISSUE = [
  '## Login fails after upgrade 🐛',
  'Steps: open https://app.example.com/login?next=%2Fhome&utm=x, enter creds, press **Sign in**.',
  '```ts\nconst res = await fetch(`/api/session`, { method: "POST", body: JSON.stringify({ user, pass }) });\nif (!res.ok && res.status !== 401) throw new Error(`unexpected ${res.status}`);\n```',
  'Stack:\n    at login (src/auth.ts:42:13)\n    at async handler (src/routes.ts:88:5)',
  'Reported by 田中さん and محمد — works in 🇫🇷 build, fails in 🇯🇵 build. 👩‍💻 cc @team-auth',
  '| browser | result |\n|---|---|\n| Firefox 140 | ✔️ |\n| Chrome 150 | ❌ |',
].join('\n\n');
const ATTACK = `${ISSUE}\u{E0049}\u{E0067}\u{E006E}\u{E006F}\u{E0072}\u{E0065}\u202e \u001b[8mhidden\u001b[0m &#8203;`;

// 1. Throughput.
function throughput(label, samples) {
  const bytes = samples.reduce((a, s) => a + Buffer.byteLength(s), 0);
  const rounds = Math.max(1, Math.ceil((MB * 1024 * 1024) / bytes));
  for (const s of samples) sanitizeText(s); // warm-up
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) for (const s of samples) sanitizeText(s);
  const seconds = (performance.now() - t0) / 1000;
  rows.push({
    benchmark: `sanitizeText: ${label} (MB/s)`,
    measured: +((bytes * rounds) / 1048576 / seconds).toFixed(1),
  });
}
throughput('realistic mix (issue bodies, 1 in 8 with smuggling)', [
  ...Array(7).fill(ISSUE),
  ATTACK,
]);
throughput('plain ASCII (fast path)', [
  'Just a plain ASCII line of log output with numbers 12345 and words.\n'.repeat(50),
]);

// 2. Per call.
const annotations = READ_ONLY_ANNOTATIONS;
const issueTool = defineTool({
  name: 'demo_get_issue',
  title: 'Get issue',
  description: 'Returns an issue.',
  access: 'read',
  annotations,
  input: z.strictObject({ board: z.string().max(40) }),
  target: ({ board }) => `demo:board/${board}`,
  handler: async ({ board }, ctx) => ctx.untrusted(ISSUE.repeat(4), `demo:board/${board}#1`),
});
const definition = defineServer({ name: 'bench', version: '1', tools: [issueTool] });
const discard = { append() {}, failures: new Map() };
const logger = createLogger({ destination: createWriteStream('/dev/null') });

function coreFactory(guarded) {
  const config = loadConfig(
    baseConfigSchema,
    guarded
      ? { GATEHOUSE_ALLOW_TARGETS: 'demo:board/*', GATEHOUSE_RATE_READ_PER_MIN: '1000000' }
      : {},
  );
  const runtime = createRuntime(config, logger, { audit: discard });
  const permissive = {
    toolVisible: () => ({ allow: true, rule: 'bench' }),
    targetAllowed: () => ({ allow: true, rule: 'bench' }),
  };
  return createServerFactory(
    definition,
    guarded ? runtime : { ...runtime, policy: permissive, limits: undefined },
  );
}
function bareFactory() {
  return () => {
    const server = new McpServer({ name: 'bare', version: '1' });
    server.registerTool(
      'demo_get_issue',
      {
        description: 'Returns an issue.',
        inputSchema: z.strictObject({ board: z.string().max(40) }),
        annotations,
      },
      async () => ({
        content: [{ type: 'text', text: ISSUE.repeat(4) }],
      }),
    );
    return server;
  };
}
const conns = {
  bare: await connectInMemory(bareFactory()),
  'core, minimal guard': await connectInMemory(coreFactory(false)),
  'core, full guard': await connectInMemory(coreFactory(true)),
};
const samples = Object.fromEntries(Object.keys(conns).map((k) => [k, []]));
const call = (c) => c.client.callTool({ name: 'demo_get_issue', arguments: { board: 'general' } });
for (const c of Object.values(conns)) for (let i = 0; i < 300; i++) await call(c);
for (let r = 0; r < 10; r++) {
  const names = Object.keys(conns);
  for (const name of r % 2 ? names.reverse() : names) {
    for (let i = 0; i < CALLS / 10; i++) {
      const t0 = performance.now();
      await call(conns[name]);
      samples[name].push(performance.now() - t0);
    }
  }
}
for (const c of Object.values(conns)) await c.close();
const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
rows.push({
  benchmark: 'read tool, 4 KB result: full guard vs minimal guard (median ms)',
  baseline: +m['core, minimal guard'].toFixed(4),
  measured: +m['core, full guard'].toFixed(4),
  ratio: +(m['core, full guard'] / m['core, minimal guard']).toFixed(3),
});
rows.push({
  benchmark: 'read tool, 4 KB result: core with full guard vs bare SDK (median ms)',
  baseline: +m.bare.toFixed(4),
  measured: +m['core, full guard'].toFixed(4),
  ratio: +(m['core, full guard'] / m.bare).toFixed(3),
});
console.table(rows);
