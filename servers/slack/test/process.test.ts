import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  connectHttp,
  connectStdio,
  runConformance,
  runOnOldNode,
  spawnServer,
} from '@gatehouse/testkit';
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
      expect(result.structuredContent).toMatchObject({ channel: { id: 'C0INCIDENT' } });
    } finally {
      await connection.close();
    }
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('"msg":"Slack access checked"');
    expect(stderr).toContain('{"channel":"#incidents","read":true,"post":false}');
    expect(stderr).not.toContain(TOKEN);
  });

  it('refuses a rejected token: exit 2 naming SLACK_BOT_TOKEN, audited, the token nowhere', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slack-refused-'));
    const auditFile = join(dir, 'audit.jsonl');
    const rejected = 'xoxb-9999999999-REJECTEDREJECTEDREJECTED';
    const server = await spawnServer(process.execPath, [BIN], {
      env: env({
        SLACK_BOT_TOKEN: rejected,
        GATEHOUSE_AUDIT_SINKS: 'file',
        GATEHOUSE_AUDIT_FILE: auditFile,
      }),
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    const output = server.logs.map((l) => l.raw ?? '').join('\n');
    expect(output).toContain('SLACK_BOT_TOKEN: Slack rejected the bot token');
    expect(output).not.toContain(rejected);
    const audit = readFileSync(auditFile, 'utf8');
    expect(audit).toContain('"action":"gatehouse/start_refused"');
    expect(audit).not.toContain(rejected);
  });

  it('serves both eras over HTTP and passes the conformance scenarios that apply', async () => {
    const server = await spawnServer(process.execPath, [BIN], {
      env: env({
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_ENABLE_WRITES: 'true',
      }),
    });
    try {
      for (const era of ['legacy', 'modern'] as const) {
        const { client, close } = await connectHttp(server.url!, { era });
        const listed = await client.callTool({ name: 'slack_list_channels', arguments: {} });
        expect(listed.structuredContent).toMatchObject({
          channels: [{ name: 'general' }, { name: 'incidents' }],
        });
        const preview = await client.callTool({
          name: 'slack_post_message',
          arguments: { channel: '#incidents', text: 'hi', dry_run: true },
        });
        expect(preview.structuredContent).toMatchObject({ dry_run: true });
        await close();
      }
      for (const scenario of [
        'server-initialize',
        'tools-list',
        'resources-list',
        'prompts-list',
      ]) {
        const result = await runConformance(server.url!, { scenario }, 55_000);
        expect(result.checks?.failed, `${scenario}\n${result.output}`).toBe(0);
      }
    } finally {
      await server.stop();
    }
  }, 120_000);
});

describe('on a Node.js that is too old', () => {
  it("says which Node.js it needs instead of failing on syntax (the machine's Node 20)", async () => {
    const old = runOnOldNode(BIN);
    expect(old.version).toMatch(/^20\./);
    expect(old).toMatchObject({ status: 1, stderr: old.refusal });
  });
});
