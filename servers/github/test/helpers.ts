import { loadConfig } from '@gatehouse/core';
import { createTestHarness } from '@gatehouse/core/testing';
import type { AuditRecord } from '@gatehouse/audit';
import { connectInMemory } from '@gatehouse/testkit';
import { githubSeed, startGitHubFake } from '@gatehouse/testkit/github';
import type { Connection, Era } from '@gatehouse/testkit';
import type { GitHubFake, GitHubFakeOptions } from '@gatehouse/testkit/github';
import { expect } from 'vitest';
import { validateGitHubResponses } from '@gatehouse/testkit/github';
import { GitHubConfigSchema } from '../src/config.ts';
import type { GitHubPacing } from '../src/client.ts';
import type { GitHubConfig } from '../src/config.ts';
import { createGitHubServer } from '../src/server.ts';

export const TOKEN =
  'github_pat_11TESTTOKEN0000000000000000000000000000000000000000000000000000000000000000000';

/** The fake GitHub of the tests: the seed world, one fine-grained token for `octo`. */
export function startFake(options: Partial<GitHubFakeOptions> = {}): Promise<GitHubFake> {
  return startGitHubFake({
    repos: githubSeed(),
    tokens: { [TOKEN]: { login: 'octo', repos: ['acme/web', 'acme/secret'] } },
    ...options,
  });
}

/** A GitHub server connected to a real MCP client in memory, with its audit records and log. */
export interface GitHubHarness extends Connection {
  readonly config: GitHubConfig;
  readonly records: AuditRecord[];
  readonly logs: () => string;
}

/** The server against `fake`, allowed acme/api and acme/web unless `env` says otherwise. */
export async function connectGitHub(
  fake: GitHubFake,
  env: Record<string, string> = {},
  options: { era?: Era; verify?: boolean; productionPacing?: boolean } = {},
): Promise<GitHubHarness> {
  const config = loadConfig(GitHubConfigSchema, {
    GATEHOUSE_PRINCIPAL: 'tester',
    // The suites read answers' structured content (off by default: ADR 0014).
    GATEHOUSE_STRUCTURED_OUTPUT: 'true',
    GATEHOUSE_RATE_READ_PER_MIN: '100000',
    GATEHOUSE_RATE_WRITE_PER_MIN: '100000',
    GITHUB_TOKEN: TOKEN,
    GITHUB_API_URL: fake.url,
    GITHUB_REPOS: 'acme/api,acme/web',
    ...env,
  });
  const harness = createTestHarness(config);
  const pacing = options.productionPacing === true ? {} : { pacing: FAST_PACING };
  const definition = createGitHubServer(config, { logger: harness.logger, ...pacing });
  if (options.verify !== false) await definition.verify();
  const connection = await connectInMemory(harness.factory(definition), {
    era: options.era ?? 'legacy',
  });
  return { ...connection, config, records: harness.records, logs: harness.logs };
}

/**
 * GitHub's pacing (issue creation 1 per 3 s, search 1 per 2 s) would make the suite crawl; the
 * tests keep rate-limit detection and waits, unpaced, with a rate limit's second lasting 10 ms.
 */
export const FAST_PACING: GitHubPacing = { intervals: {}, secondMs: 10 };

/** Every response the fake sent validates against GitHub's OpenAPI description. */
export function expectValidResponses(fake: GitHubFake): void {
  expect(fake.responses.length).toBeGreaterThan(0);
  expect(validateGitHubResponses(fake.responses)).toEqual([]);
}

/** The text of a tool result, as the model reads it. */
export { resultText as text } from '@gatehouse/testkit';
