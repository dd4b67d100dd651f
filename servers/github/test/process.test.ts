import { fileURLToPath } from 'node:url';
import { connectHttp, connectStdio, spawnServer, unframed } from '@gatehouse/testkit';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN, expectValidResponses, startFake } from './helpers.ts';

// The built binary over stdio (Claude Desktop) and Streamable HTTP, and the conformance
// suite's server-agnostic scenarios against it.

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
let fake: GitHubFake;

beforeAll(async () => {
  fake = await startFake();
});
afterAll(async () => {
  expectValidResponses(fake);
  await fake?.close();
});

const env = (extra: Record<string, string> = {}) => ({
  GATEHOUSE_STRUCTURED_OUTPUT: 'true',
  PATH: process.env.PATH ?? '',
  GITHUB_TOKEN: TOKEN,
  GITHUB_API_URL: fake.url,
  GITHUB_REPOS: 'acme/api,acme/web',
  ...extra,
});

describe('the binary', () => {
  it('serves stdio, logs what the token reaches, and never the token', async () => {
    const connection = await connectStdio(BIN, [], { env: env() });
    try {
      const result = await connection.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/api', number: 1 },
      });
      expect(unframed(result.structuredContent)).toMatchObject({
        issue: { title: 'Login fails with SSO' },
      });
      const prompt = await connection.client.getPrompt({
        name: 'github_summarise_backlog',
        arguments: { repo: 'acme/api' },
      });
      expect(prompt.messages).toHaveLength(1);
    } finally {
      await connection.close();
    }
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('"msg":"GitHub access checked"');
    expect(stderr).toContain('"identity":"octo"');
    expect(stderr).not.toContain(TOKEN);
  });

  // Both eras, conformance, SIGTERM and a rejected credential: the contract (test/contract.test.ts).
  it('previews a write over HTTP when the operator enables writes', async () => {
    const server = await spawnServer(process.execPath, [BIN], {
      env: env({
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_ENABLE_WRITES: 'true',
      }),
    });
    try {
      const { client, close } = await connectHttp(server.url!);
      const preview = await client.callTool({
        name: 'github_add_comment',
        arguments: { repo: 'acme/api', number: 1, body: 'hi', dry_run: true },
      });
      expect(unframed(preview.structuredContent)).toMatchObject({ dry_run: true });
      await close();
    } finally {
      await server.stop();
    }
  });
});
