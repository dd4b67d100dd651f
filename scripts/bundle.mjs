// Bundles a server's compiled entry (dist/main.js) with its dependencies into dist/bundle/, which
// the bin imports: one file for the start-up path instead of several hundred modules (the SDK, zod
// and the core resolved and read one by one). Code loaded on demand (HTTP, auth, Redis, metrics,
// tracing) stays in its own chunks, loaded only when used. Measured: the GitHub server's cold
// start 327 → 238 ms (ADR 0014). Kept outside: libpg-query (it loads its WebAssembly from its own
// directory) and pg-native (an optional native module pg probes for).
//   node ../../scripts/bundle.mjs   (from a server's directory, after tsc)
import { rmSync } from 'node:fs';
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

if (process.argv[1] === fileURLToPath(import.meta.url)) await bundle('dist/main.js', 'dist/bundle');
