import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify, stripVTControlCharacters } from 'node:util';
import { MIN_NODE } from '@gatehouse/audit/node-check';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/**
 * Runs `scripts/gen-docs.mjs --check` for one scope of the repository's generated docs and
 * returns what it printed: empty when the docs match the code, the files that drifted when
 * not. Throws when the generator itself failed (`script` replaces it in the testkit's tests).
 */
export async function checkGeneratedDocs(
  scope: string,
  script = fileURLToPath(new URL('../../../scripts/gen-docs.mjs', import.meta.url)),
): Promise<string> {
  const result = await run(process.execPath, [script, '--check', '--scope', scope]).catch(
    (error: { code?: unknown; stdout?: string; stderr?: string }) => error,
  );
  const code = 'code' in result ? result.code : 0;
  // Out of date: exit 1 with what drifted on stdout. Anything else — a crash, a signal, a
  // message on stderr — is a generator that did not run, never a pass.
  if (code === 1 && (result.stdout ?? '') !== '') return result.stdout ?? '';
  if (code !== 0 || (result.stderr ?? '') !== '') {
    throw new Error(
      `gen-docs --check --scope ${scope} failed (exit ${String(code)}): ${(result.stderr ?? '').slice(0, 2000)}`,
    );
  }
  return result.stdout ?? '';
}

/** The outcome of one run of the official MCP conformance suite. */
export interface ConformanceRun {
  /**
   * The suite's exit code: 0 when every required check passed or is in the baseline; -1 when it
   * did not finish (killed at the timeout, by a signal, or its output overflowed).
   */
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
  ).catch(
    (error: {
      code?: unknown;
      signal?: unknown;
      killed?: boolean;
      stdout?: string;
      stderr?: string;
    }) => error,
  );
  const output = stripVTControlCharacters(`${result.stdout ?? ''}${result.stderr ?? ''}`);
  const counts = [...output.matchAll(/Passed: (\d+)\/(\d+), (\d+) failed/g)].at(-1);
  // A run that was killed (timeout, signal: code null) or overflowed its output buffer (a
  // string code) did not pass: only a numeric exit code counts, and only 0 is a pass.
  const code = 'code' in result ? result.code : 0;
  return {
    exitCode: typeof code === 'number' ? code : -1,
    output,
    summary: output.split('=== SUMMARY ===')[1] ?? output,
    checks:
      counts === undefined
        ? undefined
        : { passed: Number(counts[1]), total: Number(counts[2]), failed: Number(counts[3]) },
  };
}

/** The machine's own Node.js (20, end of life), beside the Node 24 the suite runs on. */
const MACHINE_NODE = '/usr/bin/node';

/**
 * Runs `bin` on the machine's own old Node.js, as an operator who has not upgraded would, and
 * returns its exit status and stderr with the version it ran on and the refusal it should have
 * printed (the bins check the version before importing anything newer than Node 20 parses).
 */
export function runOnOldNode(
  bin: string,
  args: readonly string[] = [],
): { status: number | null; stderr: string; version: string; refusal: string } {
  const version = spawnSync(MACHINE_NODE, ['-p', 'process.versions.node'], {
    encoding: 'utf8',
  }).stdout.trim();
  const result = spawnSync(MACHINE_NODE, [bin, ...args], { encoding: 'utf8', env: {} });
  return {
    status: result.status,
    stderr: result.stderr,
    version,
    refusal: `Gatehouse needs Node.js ${MIN_NODE} or later (Node 24 LTS is recommended); this is Node.js ${version}. Install a newer Node.js and run it again.\n`,
  };
}
