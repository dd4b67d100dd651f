import { fileURLToPath } from 'node:url';
import { connectStdio, unframed } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMAIL, TOKEN, startFake } from './helpers.ts';

// The built binary over stdio: what the start-up check logs. A rejected credential, HTTP,
// conformance and an old Node.js: the contract (test/contract.test.ts).

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
let fake: JiraFake;
beforeAll(async () => {
  fake = await startFake();
});
afterAll(() => fake?.close());

const env = (extra: Record<string, string> = {}) => ({
  GATEHOUSE_STRUCTURED_OUTPUT: 'true',
  PATH: process.env.PATH ?? '',
  JIRA_URL: fake.url,
  JIRA_PROJECTS: 'OPS,WEB',
  JIRA_EMAIL: EMAIL,
  JIRA_API_TOKEN: TOKEN,
  ...extra,
});

describe('the binary', () => {
  it('serves stdio, logs what the credentials may do, never the token', async () => {
    const connection = await connectStdio(BIN, [], { env: env() });
    try {
      const result = await connection.client.callTool({
        name: 'jira_get_issue',
        arguments: { key: 'OPS-2' },
      });
      expect(unframed(result.structuredContent)).toMatchObject({
        issue: { key: 'OPS-2', summary: 'Disk full on db-7' },
      });
    } finally {
      await connection.close();
    }
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('"msg":"Jira access checked"');
    expect(stderr).not.toContain(TOKEN);
  });
});
