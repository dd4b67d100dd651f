import { fileURLToPath } from 'node:url';
import { connectStdio, runOnOldNode, spawnServer } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMAIL, TOKEN, startFake } from './helpers.ts';

// The built binary over stdio.

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
      expect(result.structuredContent).toMatchObject({
        issue: { key: 'OPS-2', summary: 'Disk full on db-7' },
      });
    } finally {
      await connection.close();
    }
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('"msg":"Jira access checked"');
    expect(stderr).not.toContain(TOKEN);
  });

  it('exits 2 naming the variable when the token is rejected', async () => {
    const server = await spawnServer(process.execPath, [BIN], {
      env: env({ JIRA_API_TOKEN: 'revoked-token' }),
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    expect(server.logs.map((l) => l.raw ?? '').join('\n')).toContain(
      'JIRA_API_TOKEN: Jira rejected the credentials (401)',
    );
  });
});

describe('on a Node.js that is too old', () => {
  it("says which Node.js it needs instead of failing on syntax (the machine's Node 20)", async () => {
    const old = runOnOldNode(BIN);
    expect(old.version).toMatch(/^20\./);
    expect(old).toMatchObject({ status: 1, stderr: old.refusal });
  });
});
