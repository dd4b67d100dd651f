import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify, stripVTControlCharacters } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/**
 * Runs `scripts/gen-docs.mjs --check` for one scope of the repository's generated docs and
 * returns what it printed: empty when the docs match the code.
 */
export async function checkGeneratedDocs(scope: string): Promise<string> {
  const script = fileURLToPath(new URL('../../../scripts/gen-docs.mjs', import.meta.url));
  const result = await run(process.execPath, [script, '--check', '--scope', scope]).catch(
    (error: { stdout?: string }) => error,
  );
  return result.stdout ?? '';
}

/** The outcome of one run of the official MCP conformance suite. */
export interface ConformanceRun {
  /** The suite's exit code: 0 when every required check passed or is in the baseline. */
  readonly exitCode: number;
  /** Its output without colours. */
  readonly output: string;
  /** The `=== SUMMARY ===` part, or the whole output. */
  readonly summary: string;
  /** From the last `Passed: p/t, f failed` line, when there is one. */
  readonly checks: { passed: number; total: number; failed: number } | undefined;
}

/**
 * Runs `@modelcontextprotocol/conformance server` against `url`: one scenario, or a spec
 * revision's requirements with a baseline of expected failures.
 */
export async function runConformance(
  url: URL | string,
  what: { scenario: string } | { requirements: string; expectedFailures: string },
  timeoutMs = 300_000,
): Promise<ConformanceRun> {
  const bin = join(
    dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
    'dist/index.js',
  );
  // The suite's DNS-rebinding scenario needs a localhost URL, not 127.0.0.1.
  const target = new URL(url);
  target.hostname = 'localhost';
  const args =
    'scenario' in what
      ? ['--scenario', what.scenario]
      : [
          '--requirements',
          what.requirements,
          '--expected-failures',
          what.expectedFailures,
          '-o',
          mkdtempSync(join(tmpdir(), `conformance-${what.requirements}-`)),
        ];
  const result = await run(
    process.execPath,
    [bin, 'server', '--url', target.href, ...args, '--timeout', '20000'],
    { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
  ).catch((error: { code?: number; stdout?: string; stderr?: string }) => error);
  const output = stripVTControlCharacters(`${result.stdout ?? ''}${result.stderr ?? ''}`);
  const counts = [...output.matchAll(/Passed: (\d+)\/(\d+), (\d+) failed/g)].at(-1);
  return {
    exitCode: 'code' in result && typeof result.code === 'number' ? result.code : 0,
    output,
    summary: output.split('=== SUMMARY ===')[1] ?? output,
    checks:
      counts === undefined
        ? undefined
        : { passed: Number(counts[1]), total: Number(counts[2]), failed: Number(counts[3]) },
  };
}
