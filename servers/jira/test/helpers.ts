import { loadConfig } from '@gatehouse/core';
import { checkAtStart } from '@gatehouse/core/runtime';
import { createTestHarness } from '@gatehouse/core/testing';
import type { AuditRecord } from '@gatehouse/audit';
import { connectInMemory } from '@gatehouse/testkit';
import type { Connection, Era } from '@gatehouse/testkit';
import { jiraSeed, startJiraFake } from '@gatehouse/testkit/jira';
import type { JiraFake, JiraFakeOptions } from '@gatehouse/testkit/jira';
import { expect } from 'vitest';
import { JiraConfigSchema } from '../src/config.ts';
import type { JiraConfig } from '../src/config.ts';
import { createJiraServer } from '../src/server.ts';

export const EMAIL = 'bot@acme.example';
export const TOKEN = 'ATATT3xFfGF0TESTTOKENtesttoken0000000000000000';

export function startFake(options: Partial<JiraFakeOptions> = {}): Promise<JiraFake> {
  return startJiraFake({
    world: jiraSeed(),
    credentials: [{ email: EMAIL, token: TOKEN, accountId: '557058:bot' }],
    ...options,
  });
}

export interface JiraHarness extends Connection {
  readonly config: JiraConfig;
  readonly records: AuditRecord[];
  readonly logs: () => string;
}

/** The server against `fake` (projects OPS, WEB and AND), started as runServer starts it. */
export async function connectJira(
  fake: JiraFake,
  env: Record<string, string> = {},
  era: Era = 'legacy',
): Promise<JiraHarness> {
  const config = loadConfig(JiraConfigSchema, {
    GATEHOUSE_PRINCIPAL: 'tester',
    // The suites read answers' structured content (off by default: ADR 0014).
    GATEHOUSE_STRUCTURED_OUTPUT: 'true',
    GATEHOUSE_RATE_READ_PER_MIN: '100000',
    JIRA_URL: fake.url,
    JIRA_PROJECTS: 'OPS,WEB,AND',
    JIRA_EMAIL: EMAIL,
    JIRA_API_TOKEN: TOKEN,
    ...env,
  });
  const harness = createTestHarness(config);
  const definition = createJiraServer(config, {
    logger: harness.logger,
    jira: { secondMs: 10, onSchemaMismatch: 'throw' },
  });
  await checkAtStart(definition, harness.logger);
  const connection = await connectInMemory(harness.factory(definition), { era });
  return { ...connection, config, records: harness.records, logs: harness.logs };
}

/** No response of the fake drifted from jira.js's (strict) schemas. */
export function expectNoSchemaDrift(): void {
  const drift =
    (globalThis as Record<symbol, unknown[] | undefined>)[
      Symbol.for('apis-code-gen.schemaAudit')
    ] ?? [];
  expect(drift).toEqual([]);
}

/** The text of a tool result, as the model reads it. */
export { resultText as text } from '@gatehouse/testkit';

export const keys = (result: unknown): string[] =>
  (
    (result as { structuredContent?: { issues?: Array<{ key: string }> } }).structuredContent
      ?.issues ?? []
  ).map((i) => i.key);
