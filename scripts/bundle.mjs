// Bundles a server's compiled entry (dist/main.js) with its dependencies into dist/bundle/, which
// the bin imports: one file for the start-up path instead of several hundred modules (the SDK, zod
// and the core resolved and read one by one). Code loaded on demand (HTTP, auth, Redis, metrics,
// tracing) stays in its own chunks, loaded only when used. Measured: the GitHub server's cold
// start 327 → 238 ms (ADR 0014). Kept outside: libpg-query (it loads its WebAssembly from its own
// directory) and pg-native (an optional native module pg probes for).
// It also writes the bin, dist/index.js — the same for every server (writeBin below).
//   node ../../scripts/bundle.mjs   (from a server's directory, after tsc)
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

/** Bundles `input` (an ES module) into `out` (emptied first); the entry keeps its file name. */
export async function bundle(input, out) {
  rmSync(out, { recursive: true, force: true });
  await build({
    input,
    platform: 'node',
    external: (id) => /^(libpg-query|pg-native)(\/|$)/.test(id),
    logLevel: 'warn',
    output: {
      format: 'esm',
      dir: out,
      entryFileNames: '[name].js',
      chunkFileNames: 'chunk-[hash].js',
    },
  });
}

/**
 * The bin of a server: the Node version check first (on an old Node it says which version is
 * needed instead of failing on syntax deep in a dependency; everything else loads after it),
 * Node's on-disk compile cache (a warm start skips compiling the SDK and zod again), then the
 * bundle (config → factory → transport, main.ts). Its node flags size V8's heap for a server, not
 * a batch job — steady RSS under load ~125 MB instead of ~280 MB, no cost to cold start or
 * throughput (ADR 0014) — and carry the server's own `gatehouse.nodeFlags` from its package.json
 * first (the postgres server's `--liftoff-only`: V8 does not re-compile the SQL parser's huge
 * WebAssembly function with TurboFan, a transient of several hundred MB; ADR 0007).
 * The shebang passes them when the bin is run as a program. Started by `node <bin>` instead (a
 * client's config, an MCP Bundle, the image's entry point, which has no shell or `env`), the bin
 * runs itself again with the flags it lacks — `process.execve`: the same process and pid, no
 * shell — keeping any the caller gave (`node --max-old-space-size=512 <bin>`, or the same in
 * NODE_OPTIONS, keeps 512).
 */
export function writeBin(file = 'dist/index.js', manifest = 'package.json') {
  const own = JSON.parse(readFileSync(manifest, 'utf8')).gatehouse?.nodeFlags ?? [];
  const flags = [...own, '--max-semi-space-size=8', '--max-old-space-size=256'];
  writeFileSync(
    file,
    `#!/usr/bin/env -S node ${flags.join(' ')}
// Written by scripts/bundle.mjs (writeBin): the same bin for every server.
import '@gatehouse/core/node-check';

// Run without its flags (node <bin>): the same process again, with the ones it lacks.
const flags = ${JSON.stringify(flags)};
const options = (process.env.NODE_OPTIONS ?? '').split(/\\s+/);
const given = new Set([...process.execArgv, ...options].map((f) => f.split('=')[0]));
const lacking = flags.filter((f) => !given.has(f.split('=')[0]));
if (lacking.length > 0 && typeof process.execve === 'function') {
  const [, bin, ...rest] = process.argv;
  const node = process.execPath;
  try {
    process.execve(node, [node, ...process.execArgv, ...lacking, bin, ...rest], process.env);
  } catch {
    // Not on this platform (Windows): it runs without them, as before.
  }
}

const { enableCompileCache } = await import('node:module');
enableCompileCache();
// A variable specifier: the bundle is a sibling directory, written by the same build step.
const entry = './bundle/main.js';
await import(entry);
`,
  );
  chmodSync(file, 0o755);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await bundle('dist/main.js', 'dist/bundle');
  writeBin();
}
