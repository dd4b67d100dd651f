import { fileURLToPath } from 'node:url';
import { runConformance, spawnServer } from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { companyDatabase } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

// The official conformance suite's server-agnostic scenarios against the real Postgres server
// over Streamable HTTP. The others call the "everything" fixture's own tools and prompts by name;
// they run against packages/fixture (docs/conformance.md).

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
  const result = await runConformance(server.url!, { scenario }, 55_000);
  expect(result.checks, result.output).toBeDefined();
  expect(result.checks!.failed, result.output).toBe(0);
  expect(result.checks!.passed, result.output).toBeGreaterThan(0);
});
