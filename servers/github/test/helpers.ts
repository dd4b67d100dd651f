import { Writable } from 'node:stream';
import { createLogger, createRuntime, createServerFactory, loadConfig } from '@gatehouse/core';
import type { AuditRecord } from '@gatehouse/audit';
import { connectInMemory, githubSeed, memoryAudit, startGitHubFake } from '@gatehouse/testkit';
import type { Connection, Era, GitHubFake, GitHubFakeOptions } from '@gatehouse/testkit';
// The build the throttling plugin imports, and the server patches (see src/client.ts).
import Bottleneck from 'bottleneck/light.js';
import { expect } from 'vitest';
import { validateGitHubResponses } from '@gatehouse/testkit';
import { GitHubConfigSchema } from '../src/config.ts';
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
    GATEHOUSE_RATE_READ_PER_MIN: '100000',
    GATEHOUSE_RATE_WRITE_PER_MIN: '100000',
    GITHUB_TOKEN: TOKEN,
    GITHUB_API_URL: fake.url,
    GITHUB_REPOS: 'acme/api,acme/web',
    ...env,
  });
  let logText = '';
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logText += chunk.toString();
        done();
      },
    }),
  });
  const { audit, records } = memoryAudit({ name: 'github-test', version: '1' });
  const definition = createGitHubServer(config, {
    logger,
    ...(options.productionPacing === true ? {} : { throttle: fastThrottle() }),
  });
  if (options.verify !== false) await definition.verify();
  const connection = await connectInMemory(
    createServerFactory(definition, createRuntime(config, logger, { audit })),
    { era: options.era ?? 'legacy' },
  );
  return { ...connection, config, records, logs: () => logText };
}

let throttleIds = 0;

/**
 * GitHub's pacing (issue creation 1 per 3 s, search 1 per 2 s) would make the suite crawl; the
 * tests keep the throttling plugin — rate-limit detection and retries — with unpaced limiters
 * and a retry-after unit of 10 ms instead of 1 s.
 */
export function fastThrottle(): Record<string, unknown> {
  const group = () => new Bottleneck.Group({ maxConcurrent: 10, minTime: 0 });
  return {
    id: `test-${process.pid}-${throttleIds++}`,
    global: group(),
    search: group(),
    write: group(),
    notifications: group(),
    retryAfterBaseValue: 10,
  };
}

/** Every response the fake sent validates against GitHub's OpenAPI description. */
export function expectValidResponses(fake: GitHubFake): void {
  expect(fake.responses.length).toBeGreaterThan(0);
  expect(validateGitHubResponses(fake.responses)).toEqual([]);
}

/** The text content of a tool result. */
export function text(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}
