import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify, stripVTControlCharacters } from 'node:util';
import { spawnServer } from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { companyDatabase } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

// The official conformance suite's server-agnostic scenarios against the real Postgres server
// over Streamable HTTP. The others call the "everything" fixture's own tools and prompts by name;
// they run against packages/fixture (docs/conformance.md).

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const conformanceBin = join(
  dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
  'dist/index.js',
);
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const SCENARIOS = [
  'server-initialize',
  'ping',
  'tools-list',
  'resources-list',
  'prompts-list',
  'sep-2164-resource-not-found',
  'dns-rebinding-protection',
  'caching',
  'http-header-validation',
];

let company: CompanyDatabase;
let server: ServerProcess;

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'conformance');
  server = await spawnServer(process.execPath, ['--liftoff-only', BIN], {
    env: {
      PATH: process.env.PATH ?? '',
      POSTGRES_URL: company.url,
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_PORT: '0',
    },
  });
});
afterAll(async () => {
  await server?.stop();
  await company?.close();
});

it.each(SCENARIOS)('passes %s', { timeout: 60_000 }, async (scenario) => {
  // The dns-rebinding scenario needs a localhost URL, not 127.0.0.1.
  const url = new URL(server.url!.href);
  url.hostname = 'localhost';
  const result = await run(
    process.execPath,
    [conformanceBin, 'server', '--url', url.href, '--scenario', scenario, '--timeout', '20000'],
    { timeout: 55_000, maxBuffer: 16 * 1024 * 1024 },
  ).catch((error: { code?: number; stdout?: string; stderr?: string }) => error);
  const output = stripVTControlCharacters(result.stdout ?? '');
  const passed = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(output);
  expect(passed, output).not.toBeNull();
  expect(Number(passed![3]), output).toBe(0);
  expect(Number(passed![1]), output).toBeGreaterThan(0);
});
