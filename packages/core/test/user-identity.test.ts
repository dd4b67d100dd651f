// Acting on a vendor as each person (ADR 0026), through a real server process over HTTP and a
// real MCP client in both eras: a caller with no grant is answered with the link to connect —
// a URL elicitation where the client declared it, else a tool error naming the link — and no
// upstream request is made for them; once linked, their own account answers; another person
// still gets their own link; nothing falls back to the service, except the read the operator
// named.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestBrowser, connectHttp, freePort, spawnServer } from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import { startGitHubAppFake } from '@gatehouse/testkit/github';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/identity-server.ts', import.meta.url));
const CLIENT = { id: 'Iv23liIdentityTest', secret: 'identity-test-secret' };
const KEYS = {
  alice: `key-alice-${randomBytes(8).toString('hex')}`,
  bob: `key-bob-${randomBytes(8).toString('hex')}`,
  carol: `key-carol-${randomBytes(8).toString('hex')}`,
};

let fake: GitHubFake;
let server: ServerProcess;
let identityEnv: Record<string, string>;

beforeAll(async () => {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}/mcp`;
  fake = await startGitHubAppFake({
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`http://127.0.0.1:${port}/connect/gatehouse-identity/callback`],
      users: ['alice', 'bob'],
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'identity-'));
  const keyFile = join(dir, 'vault.keys');
  writeFileSync(keyFile, `k1 ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  const key = (id: string, secret: string, principal: string) => ({
    id,
    sha256: createHash('sha256').update(secret).digest('hex'),
    principal,
    scopes: ['identity:read'],
  });
  identityEnv = {
    GATEHOUSE_TRANSPORT: 'http',
    GATEHOUSE_HOST: '127.0.0.1',
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_PUBLIC_URL: publicUrl,
    GATEHOUSE_AUTH: 'api_key',
    GATEHOUSE_API_KEYS: JSON.stringify([
      key('k-alice', KEYS.alice, 'ci-alice'),
      key('k-bob', KEYS.bob, 'ci-bob'),
      key('k-carol', KEYS.carol, 'ci-carol'),
    ]),
    IDENTITY_GITHUB_ROOT: fake.rootUrl,
    IDENTITY_GITHUB_API: fake.url,
    IDENTITY_CLIENT_ID: CLIENT.id,
    IDENTITY_CLIENT_SECRET: CLIENT.secret,
    GATEHOUSE_IDENTITY: 'user',
    GATEHOUSE_VAULT_KEYS_FILE: keyFile,
    GATEHOUSE_GRANTS_FILE: join(dir, 'grants.json'),
    GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=alice,ci-bob=bob',
    GATEHOUSE_IDENTITY_READ_FALLBACK: 'identity_peek',
  };
  server = await spawnServer(process.execPath, [fixture], { env: identityEnv });
});

afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

/** A browser signed in to the fake GitHub as `login` opens `link`. */
async function openAs(login: string, link: string): Promise<{ status: number; text: string }> {
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/login?login=${login}`);
  return browser.go(link);
}

const connectAs = (who: keyof typeof KEYS, era: 'legacy' | 'modern', url = true) =>
  connectHttp(server.url!, {
    era,
    headers: { authorization: `Bearer ${KEYS[who]}` },
    ...(url ? { capabilities: { elicitation: { url: {} } } } : {}),
  });

const text = (result: unknown) =>
  (result as { content: Array<{ text: string }> }).content[0]?.text ?? '';

const userCalls = () => fake.requests.filter((r) => r.startsWith('GET /user')).length;

describe('a server acting as each person upstream', () => {
  it('answers a person with no grant with the link to connect (2025-11-25: a tool error), then acts as them', async () => {
    // Over stateless HTTP a 2025-era request is a fresh session: what the client declared at
    // initialize is not there to see, so the link comes as a tool error even to this client.
    const alice = await connectAs('alice', 'legacy');
    try {
      const before = userCalls();
      const refused = await alice.client.callTool({ name: 'identity_whoami', arguments: {} });
      expect(refused.isError).toBe(true);
      const link = /open (\S+) in your browser/.exec(text(refused))?.[1];
      expect(link).toMatch(/\/connect\/gatehouse-identity\/start\?flow=/);
      expect(userCalls()).toBe(before); // nothing was asked of GitHub for her
      const linked = await openAs('alice', link!);
      expect(linked.text).toContain('Linked as alice');
      expect(text(await alice.client.callTool({ name: 'identity_whoami', arguments: {} }))).toBe(
        'user alice',
      );
    } finally {
      await alice.close();
    }
  });

  it('asks through an input-required result (2026-07-28), and another person gets their own link', async () => {
    const bob = await connectAs('bob', 'modern');
    try {
      const asked: string[] = [];
      bob.client.setRequestHandler('elicitation/create', async (request) => {
        const params = request.params as { mode?: string; url?: string };
        asked.push(params.mode ?? 'form');
        expect((await openAs('bob', params.url!)).text).toContain('Linked as bob');
        return { action: 'accept' };
      });
      const result = await bob.client.callTool({ name: 'identity_whoami', arguments: {} });
      expect(asked).toEqual(['url']);
      expect(text(result)).toBe('user bob');
    } finally {
      await bob.close();
    }
  });

  it('names the link in a tool error to a client that cannot show one, and falls back only where the operator said', async () => {
    const carol = await connectAs('carol', 'legacy', false);
    try {
      const before = userCalls();
      const result = await carol.client.callTool({ name: 'identity_whoami', arguments: {} });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(
        /^Connect your GitHub account first: open http:\/\/127\.0\.0\.1:\d+\/connect\/gatehouse-identity\/start\?flow=\S+ in your browser, sign in, then call again\. Until then nothing is sent to GitHub for you\.$/,
      );
      expect(userCalls()).toBe(before);
      // The read the operator named may use the service credential; nothing else does.
      expect(text(await carol.client.callTool({ name: 'identity_peek', arguments: {} }))).toBe(
        'service',
      );
    } finally {
      await carol.close();
    }
  });

  it('refuses to start with a read fallback that names anything but one of its read tools', () => {
    const dir = mkdtempSync(join(tmpdir(), 'identity-fallback-'));
    const run = spawnSync(process.execPath, [fixture], {
      env: {
        PATH: process.env.PATH ?? '',
        ...identityEnv,
        GATEHOUSE_PORT: '0',
        GATEHOUSE_GRANTS_FILE: join(dir, 'grants.json'),
        GATEHOUSE_IDENTITY_READ_FALLBACK: 'identity_peek,identity_delete_everything',
      },
      input: '',
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(
      'GATEHOUSE_IDENTITY_READ_FALLBACK: identity_delete_everything is not a read tool of this server (identity_whoami, identity_peek)',
    );
  });

  it("refuses to start over stdio, where the configured credential is already the local user's", () => {
    const { GATEHOUSE_AUTH: _a, GATEHOUSE_API_KEYS: _k, ...env } = identityEnv;
    const dir = mkdtempSync(join(tmpdir(), 'identity-stdio-'));
    const run = spawnSync(process.execPath, [fixture], {
      env: {
        PATH: process.env.PATH ?? '',
        ...env,
        GATEHOUSE_TRANSPORT: 'stdio',
        GATEHOUSE_GRANTS_FILE: join(dir, 'grants.json'),
      },
      input: '',
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(
      'GATEHOUSE_TRANSPORT: acting as each person upstream needs the HTTP transport',
    );
  });
});
