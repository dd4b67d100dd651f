import { loadConfig } from '@gatehouse/core';
import { checkAtStart } from '@gatehouse/core/runtime';
import { createTestHarness } from '@gatehouse/core/testing';
import type { AuditRecord } from '@gatehouse/audit';
import { connectInMemory } from '@gatehouse/testkit';
import type { Connection, Era } from '@gatehouse/testkit';
import { slackSeed, startSlackFake, validateSlackResponses } from '@gatehouse/testkit/slack';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { expect } from 'vitest';
import { SlackConfigSchema } from '../src/config.ts';
import type { SlackConfig } from '../src/config.ts';
import { SLACK_SCOPES, createSlackServer } from '../src/server.ts';

export const TOKEN = 'xoxb-1111111111-2222222222222-TESTtokenTESTtoken0000';

/** The fake Slack of the tests: the seed workspace, one bot token with the manifest's scopes. */
export function startFake(scopes: readonly string[] = SLACK_SCOPES): Promise<SlackFake> {
  return startSlackFake({ world: slackSeed(), tokens: { [TOKEN]: { scopes } } });
}

/** Read: the seed's channels except #random's twin; post: #incidents and the Connect channel. */
export const READ = '#general,#incidents,#leadership,#partner-acme,#old-project,#random,D0DIRECT01';

export interface SlackHarness extends Connection {
  readonly config: SlackConfig;
  readonly records: AuditRecord[];
  readonly logs: () => string;
}

/** The server against `fake`, started as runServer starts it, with a real client in memory. */
export async function connectSlack(
  fake: SlackFake,
  env: Record<string, string> = {},
  era: Era = 'legacy',
): Promise<SlackHarness> {
  const config = loadConfig(SlackConfigSchema, {
    GATEHOUSE_PRINCIPAL: 'tester',
    // The suites read answers' structured content (off by default: ADR 0014).
    GATEHOUSE_STRUCTURED_OUTPUT: 'true',
    GATEHOUSE_RATE_READ_PER_MIN: '100000',
    GATEHOUSE_RATE_WRITE_PER_MIN: '100000',
    SLACK_BOT_TOKEN: TOKEN,
    SLACK_API_URL: fake.url,
    SLACK_READ_CHANNELS: READ,
    SLACK_POST_CHANNELS: '#incidents,#partner-acme,#old-project',
    ...env,
  });
  const harness = createTestHarness(config);
  const definition = createSlackServer(config, {
    logger: harness.logger,
    pacing: { secondMs: 10 },
  });
  await checkAtStart(definition, harness.logger);
  const connection = await connectInMemory(harness.factory(definition), { era });
  return { ...connection, config, records: harness.records, logs: harness.logs };
}

/** Every response the fake sent matches Slack's recorded shapes, and every post kept the rules. */
export function expectCleanFake(fake: SlackFake): void {
  expect(fake.responses.length).toBeGreaterThan(0);
  expect(validateSlackResponses(fake.responses)).toEqual([]);
  expect(fake.violations).toEqual([]);
}

/** The text of a tool result, as the model reads it. */
export { resultText as text } from '@gatehouse/testkit';

/** Runs `fn` and returns the Slack methods it sent requests to (failed ones included). */
export async function callsDuring(fake: SlackFake, fn: () => Promise<unknown>): Promise<string[]> {
  const before = fake.requests.length;
  await fn();
  return fake.requests.slice(before).map((r) => r.replace(/^POST \/api\//, ''));
}
