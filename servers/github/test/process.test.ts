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

describe('a refused start', () => {
  it('writes gatehouse/start_refused to the audit trail (a rejected token), exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-refused-'));
    const auditFile = join(dir, 'audit.jsonl');
    const rejected =
      'github_pat_11REJECTED00000000000000000000000000000000000000000000000000000000000000';
    const server = await spawnServer(BIN, [], {
      env: env({
        GITHUB_TOKEN: rejected,
        GATEHOUSE_AUDIT_SINKS: 'file',
        GATEHOUSE_AUDIT_FILE: auditFile,
      }),
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    const text = readFileSync(auditFile, 'utf8');
    const records = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: { action: string }; gatehouse?: { reason?: string } });
    expect(records.map((r) => r.event.action)).toEqual([
      'gatehouse/start_refused',
      'audit/checkpoint',
    ]);
    expect(records[0]!.gatehouse?.reason).toMatch(/^GITHUB_TOKEN: /);
    expect(text).not.toContain(rejected);
  });
});

describe('the binary', () => {
  it('serves stdio, logs what the token reaches, and never the token', async () => {
    const connection = await connectStdio(BIN, [], { env: env() });
    try {
      const result = await connection.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/api', number: 1 },
      });
      expect(result.structuredContent).toMatchObject({ issue: { title: 'Login fails with SSO' } });
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

  it('exits 2 with a clear message when the token is rejected', async () => {
    const server = await spawnServer(process.execPath, [BIN], {
      env: env({ GITHUB_TOKEN: 'ghp_revoked' }),
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    expect(server.logs.map((l) => l.raw ?? '').join('\n')).toContain(
      'GITHUB_TOKEN: GitHub rejected the credentials (401)',
    );
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
        const listed = await client.callTool({
          name: 'github_list_issues',
          arguments: { repo: 'acme/api', per_page: 1 },
        });
        expect(listed.structuredContent).toMatchObject({ repo: 'acme/api' });
        const preview = await client.callTool({
          name: 'github_add_comment',
          arguments: { repo: 'acme/api', number: 1, body: 'hi', dry_run: true },
        });
        expect(preview.structuredContent).toMatchObject({ dry_run: true });
        await close();
      }
      for (const scenario of [
        'server-initialize',
        'ping',
        'tools-list',
        'resources-list',
        'prompts-list',
        'dns-rebinding-protection',
        'caching',
        'http-header-validation',
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
