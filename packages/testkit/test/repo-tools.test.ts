import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkGeneratedDocs, runConformance } from '../src/repo-tools.js';

// The helpers other suites trust to say "the docs match" and "the conformance run passed" must
// fail when the thing they run did not: a crashed generator, a killed conformance run.

function script(body: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'gen-docs-')), 'gen.mjs');
  writeFileSync(file, body);
  return file;
}

describe('checkGeneratedDocs', () => {
  it('returns nothing when the docs match', async () => {
    expect(await checkGeneratedDocs('x', script('process.exit(0);'))).toBe('');
  });

  it('returns what drifted', async () => {
    const drift = script("console.log('out of date: docs/x.md'); process.exit(1);");
    expect(await checkGeneratedDocs('x', drift)).toBe('out of date: docs/x.md\n');
  });

  it.each([
    [
      'a generator that crashes',
      "throw new Error('boom in the generator');",
      /boom in the generator/,
    ],
    [
      'a generator that complains on stderr and exits 0',
      "console.error('cannot read schema');",
      /cannot read schema/,
    ],
    [
      'a generator killed by a signal',
      "process.kill(process.pid, 'SIGKILL');",
      /failed \(exit null\)/,
    ],
  ])('fails for %s', async (_n, body, message) => {
    await expect(checkGeneratedDocs('x', script(body))).rejects.toThrow(message);
  });
});

describe('runConformance', () => {
  it('does not turn a run killed at its timeout into a pass', async () => {
    // A server that never answers: the suite is still waiting when its time is up. (Listening
    // on every address: the suite connects to localhost, which may be ::1.)
    const server = createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(0, resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const run = await runConformance(
        `http://127.0.0.1:${port}/mcp`,
        { scenario: 'server-initialize' },
        1_500,
      );
      expect(run.exitCode).not.toBe(0);
      expect(run.exitCode).toBe(-1);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
