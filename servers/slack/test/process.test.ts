import { fileURLToPath } from 'node:url';
import { connectHttp, connectStdio, spawnServer, unframed } from '@gatehouse/testkit';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN, expectCleanFake, startFake } from './helpers.ts';

// The built binary over stdio (Claude Desktop) and Streamable HTTP.

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
let fake: SlackFake;

beforeAll(async () => {
  fake = await startFake();
});
afterAll(async () => {
  expectCleanFake(fake);
  await fake?.close();
});

const env = (extra: Record<string, string> = {}) => ({
  GATEHOUSE_STRUCTURED_OUTPUT: 'true',
  PATH: process.env.PATH ?? '',
  SLACK_BOT_TOKEN: TOKEN,
  SLACK_API_URL: fake.url,
  SLACK_READ_CHANNELS: '#general,#incidents',
  SLACK_POST_CHANNELS: '#incidents',
  ...extra,
});

describe('the binary', () => {
  it('serves stdio, logs what the bot can reach, and never the token', async () => {
    const connection = await connectStdio(BIN, [], { env: env() });
    try {
      const result = await connection.client.callTool({
        name: 'slack_read_channel',
        arguments: { channel: '#incidents' },
      });
      expect(unframed(result.structuredContent)).toMatchObject({ channel: { id: 'C0INCIDENT' } });
    } finally {
      await connection.close();
    }
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('"msg":"Slack access checked"');
    expect(stderr).toContain('{"channel":"#incidents","read":true,"post":false}');
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
        name: 'slack_post_message',
        arguments: { channel: '#incidents', text: 'hi', dry_run: true },
      });
      expect(unframed(preview.structuredContent)).toMatchObject({ dry_run: true });
      await close();
    } finally {
      await server.stop();
    }
  });
});
