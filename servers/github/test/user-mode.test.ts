// Each person acts as themselves on GitHub (ADR 0026): the built server over HTTP, real MCP
// clients in both eras, the linking pages driven by a cookie-keeping browser client, and the
// GitHub fake's App with user access tokens and per-user rights. What a call can touch is the
// person's own GitHub rights ∩ GITHUB_REPOS ∩ the tool — never the service's, never another's.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  TestBrowser,
  callWithKey,
  connectHttp,
  connectLink,
  freePort,
  personServerEnv,
  spawnServer,
  unframed,
} from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import type { AuditRecord } from '@gatehouse/audit';
import { githubSeed, startGitHubAppFake } from '@gatehouse/testkit/github';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN, text } from './helpers.ts';

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const CLIENT = { id: 'Iv23liUserModeTest', secret: `secret-${randomBytes(12).toString('hex')}` };
const PEOPLE = ['alice', 'bob', 'carol', 'mallory'] as const;
type Person = (typeof PEOPLE)[number];
const KEYS = Object.fromEntries(
  PEOPLE.map((p) => [p, `key-${p}-${randomBytes(12).toString('hex')}`]),
) as Record<Person, string>;

let fake: GitHubFake;
let server: ServerProcess;
let grantsFile: string;
let auditFile: string;
let serverEnv: Record<string, string>;

beforeAll(async () => {
  const port = await freePort();
  // Two private repositories, each with one of the two people: the allow-list names both.
  const repos = githubSeed();
  repos.find((r) => r.name === 'web')!.collaborators.alice = 'write';
  repos.find((r) => r.name === 'secret')!.collaborators.bob = 'write';
  fake = await startGitHubAppFake({
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`http://127.0.0.1:${port}/connect/gatehouse-github/callback`],
      users: ['alice', 'bob', 'mallory'],
    },
    installed: ['acme/api', 'acme/web', 'acme/secret'],
    repos,
    // The service credential exists (one read falls back to it), and must serve nobody else.
    tokens: { [TOKEN]: { login: 'octo', repos: ['acme/web', 'acme/secret'] } },
  });
  const dir = mkdtempSync(join(tmpdir(), 'github-user-'));
  const keys = join(dir, 'vault.keys');
  writeFileSync(keys, `k1 ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  grantsFile = join(dir, 'grants.json');
  auditFile = join(dir, 'audit.jsonl');
  serverEnv = personServerEnv(
    {
      port,
      keys: KEYS,
      scopes: ['github:read', 'github:write'],
      logins: 'ci-alice=alice,ci-bob=bob,ci-mallory=mallory',
    },
    {
      GATEHOUSE_STRUCTURED_OUTPUT: 'true',
      GATEHOUSE_ENABLE_WRITES: 'true',
      GATEHOUSE_AUDIT_SINKS: 'file',
      GATEHOUSE_AUDIT_FILE: auditFile,
      GATEHOUSE_IDENTITY_READ_FALLBACK: 'github_search_issues',
      GATEHOUSE_VAULT_KEYS_FILE: keys,
      GATEHOUSE_GRANTS_FILE: grantsFile,
      GITHUB_TOKEN: TOKEN,
      GITHUB_OAUTH_CLIENT_ID: CLIENT.id,
      GITHUB_OAUTH_CLIENT_SECRET: CLIENT.secret,
      GITHUB_API_URL: fake.url,
      GITHUB_WEB_URL: fake.rootUrl,
      GITHUB_REPOS: 'acme/api,acme/web,acme/secret',
      GITHUB_TRUSTED_AUTHORS_ONLY: 'true',
    },
  );
  server = await spawnServer(process.execPath, [BIN], { env: serverEnv });
});

afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

const connectAs = (who: Person, era: 'legacy' | 'modern' = 'legacy') =>
  connectHttp(server.url!, { era, headers: { authorization: `Bearer ${KEYS[who]}` } });

/** One tool call as `who`, on a fresh connection. */
const callAs = (who: Person, name: string, args: Record<string, unknown>) =>
  callWithKey(server.url!, KEYS[who], name, args);

/** `who`'s browser, signed in to GitHub as `login`, opens `link`. */
async function openAs(login: string, link: string) {
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/login?login=${login}`);
  return browser.go(link);
}

/** Links `who`'s GitHub account: a call is answered with the link, their browser opens it. */
async function link(who: Person): Promise<void> {
  const asked = await callAs(who, 'github_list_issues', { repo: 'acme/api' });
  expect(asked.isError).toBe(true);
  expect((await openAs(who, connectLink(asked)!)).text).toContain(`Linked as ${who}`);
}

/** How many requests GitHub has received. */
const sent = () => fake.requests.length;

describe('the GitHub server acting as each person', () => {
  it('answers a person with no grant with the link, and sends GitHub nothing for them', async () => {
    const before = sent();
    const result = await callAs('alice', 'github_get_issue', { repo: 'acme/web', number: 1 });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /^Connect your GitHub account first: open http:\/\/127\.0\.0\.1:\d+\/connect\/gatehouse-github\/start\?flow=\S+ in your browser/,
    );
    expect(sent()).toBe(before);
    // Resources and prompts ask the same way: no road reaches GitHub without her grant.
    const { client, close } = await connectAs('alice');
    try {
      await expect(client.readResource({ uri: 'github://acme/web/labels' })).rejects.toThrow(
        /Connect your GitHub account first/,
      );
      await expect(
        client.getPrompt({ name: 'github_summarise_backlog', arguments: { repo: 'acme/web' } }),
      ).rejects.toThrow(/Connect your GitHub account first/);
    } finally {
      await close();
    }
    expect(sent()).toBe(before);
  });

  it("links in a real browser: Debian's Chromium follows the link to GitHub and back", async () => {
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    try {
      const page = await browser.newPage();
      await page.goto(`${fake.rootUrl}/login?login=bob`);
      const asked = await callAs('bob', 'github_list_issues', { repo: 'acme/api' });
      const answer = await page.goto(connectLink(asked)!);
      expect(answer?.status()).toBe(200);
      expect(await page.textContent('p')).toBe(
        'Linked as bob. Return to your MCP client and ask again.',
      );
      // The flow's cookie was the browser's, HttpOnly, scoped to the pages, and is gone now.
      expect(
        (await page.context().cookies()).filter((c) => c.name.startsWith('gatehouse_')),
      ).toEqual([]);
      expect(
        (await callAs('bob', 'github_list_issues', { repo: 'acme/secret' })).isError,
      ).toBeFalsy();
    } finally {
      await browser.close();
    }
  });

  it('asks through a URL elicitation in the 2026-07-28 era', async () => {
    const { client, close } = await connectHttp(server.url!, {
      era: 'modern',
      headers: { authorization: `Bearer ${KEYS.alice}` },
      capabilities: { elicitation: { url: {} } },
    });
    try {
      const urls: string[] = [];
      client.setRequestHandler('elicitation/create', async (request) => {
        const params = request.params as { mode?: string; url?: string };
        urls.push(params.url!);
        expect((await openAs('alice', params.url!)).text).toContain('Linked as alice');
        return { action: 'accept' };
      });
      const result = await client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/web', number: 1 },
      });
      expect(urls).toHaveLength(1);
      expect(new URL(urls[0]!).pathname).toBe('/connect/gatehouse-github/start');
      expect(unframed(result.structuredContent)).toMatchObject({ issue: { number: 1 } });
    } finally {
      await close();
    }
  });

  it('shows each person only what GitHub lets them see, on one allow-list naming both repositories', async () => {
    // Bob linked in the real browser above.
    const read = async (who: Person, repo: string) => callAs(who, 'github_list_issues', { repo });
    expect((await read('alice', 'acme/web')).isError).toBeFalsy();
    expect(text(await read('alice', 'acme/secret'))).toMatch(/not found|cannot see/);
    expect((await read('bob', 'acme/secret')).isError).toBeFalsy();
    expect(text(await read('bob', 'acme/web'))).toMatch(/not found|cannot see/);
    // The allow-list still holds for both: a repository GitHub would show them is refused.
    expect(text(await read('alice', 'other/lib'))).toContain('not one of this server');
  });

  it('writes as the person: GitHub records them as the author', async () => {
    const opened = await callAs('alice', 'github_create_issue', {
      repo: 'acme/web',
      title: 'Filed by Alice through the agent',
      body: 'Steps to reproduce: none.',
    });
    expect(opened.isError).toBeFalsy();
    const issue = fake.repo('acme/web').issues.find((i) => i.title.includes('Filed by Alice'));
    expect(issue?.user).toBe('alice');
    const denied = await callAs('alice', 'github_create_issue', {
      repo: 'acme/secret',
      title: 'Alice cannot write here',
      body: 'x',
    });
    expect(denied.isError).toBe(true);
    expect(fake.repo('acme/secret').issues.some((i) => i.title.includes('Alice cannot'))).toBe(
      false,
    );
  });

  it('links nothing when the link is forwarded to someone else (the confused deputy)', async () => {
    const asked = await callAs('mallory', 'github_list_issues', { repo: 'acme/api' });
    const forwarded = await openAs('bob', connectLink(asked)!);
    expect(forwarded.status).toBe(403);
    expect(forwarded.text).not.toContain('mallory');
    // Mallory still has no grant: her next call is answered with a link again.
    expect(
      connectLink(await callAs('mallory', 'github_list_issues', { repo: 'acme/api' })),
    ).toBeDefined();
  });

  it('falls back to the service credential only for the read the operator named', async () => {
    // Carol's key has no GitHub login configured: she can never link, and writes never fall back.
    const search = await callAs('carol', 'github_search_issues', { text: 'Dark mode' });
    expect(search.isError, text(search)).toBeFalsy();
    const write = await callAs('carol', 'github_add_comment', {
      repo: 'acme/api',
      number: 1,
      body: 'as the bot?',
    });
    expect(write.isError).toBe(true);
    expect(text(write)).toContain('Connect your GitHub account first');
    const get = await callAs('carol', 'github_get_issue', { repo: 'acme/secret', number: 1 });
    expect(text(get)).toContain('Connect your GitHub account first');
  });

  it("never answers one person with another's lookups, run interleaved (GHSA-pjp5-fpmr-3349)", async () => {
    // Seven calls each at once: within the eight a principal may run together.
    const asks = Array.from({ length: 14 }, (_, i) => {
      const who: Person = i % 2 === 0 ? 'alice' : 'bob';
      const repo = i % 4 < 2 ? 'acme/web' : 'acme/secret';
      return { who, repo, result: callAs(who, 'github_get_issue', { repo, number: 1 }) };
    });
    for (const { who, repo, result } of asks) {
      const mine = (who === 'alice') === (repo === 'acme/web');
      const answer = await result;
      expect(answer.isError ?? false, `${who} reading ${repo}: ${text(answer)}`).toBe(!mine);
    }
  });

  it('keeps tokens sealed at rest: the grant file names no one and holds no token', () => {
    const stored = readFileSync(grantsFile, 'utf8');
    expect(stored).not.toMatch(/gh[ur]_/);
    expect(stored).not.toMatch(/alice|bob|ci-/);
    for (const issued of fake.oauth!.issued) expect(stored).not.toContain(issued.login);
  });

  it('refreshes an expired token, and asks again once GitHub revoked the grant', async () => {
    const refreshes = () => fake.oauth!.issued.filter((g) => g.grant === 'refresh_token').length;
    const before = refreshes();
    fake.oauth!.advance(9 * 3600); // past the eight hours of a user access token
    expect(
      (await callAs('bob', 'github_list_issues', { repo: 'acme/secret' })).isError,
    ).toBeFalsy();
    expect(refreshes()).toBe(before + 1);
    // Bob revokes the app's authorization on GitHub: his grant is gone, he is asked again.
    fake.oauth!.revokeUser('bob');
    const after = await callAs('bob', 'github_list_issues', { repo: 'acme/secret' });
    expect(text(after)).toContain('no longer accepts the account you linked');
    expect(connectLink(after)).toBeDefined();
  });

  it('never lends the service credential to a person whose grant expired, not even for the fallback read', async () => {
    await link('bob');
    fake.oauth!.advance(200 * 86_400); // past the six months of the refresh token as well
    const before = sent();
    const search = await callAs('bob', 'github_search_issues', { text: 'Dark mode' });
    expect(search.isError).toBe(true);
    expect(text(search)).toContain('no longer accepts the account you linked');
    // What reached GitHub for him: the expired token once and the refused refresh, nothing else.
    expect(fake.requests.slice(before).filter((r) => r.startsWith('GET /search'))).toHaveLength(1);
  });

  it('audits who asked, whom each call acted as upstream, and every link made or refused', () => {
    const records = readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditRecord);
    const calls = records.filter((r) => r.event.action === 'tools/call');
    const acted = (principal: string) =>
      calls.filter((r) => r.user?.id === principal && r.auth?.upstream !== undefined);
    expect(acted('ci-alice').length).toBeGreaterThan(0);
    for (const r of acted('ci-alice')) {
      expect(r.auth?.upstream).toBe('user');
      expect(r.user?.effective).toMatchObject({ name: 'alice', domain: expect.any(String) });
    }
    for (const r of acted('ci-bob')) expect(r.user?.effective?.name).toBe('bob');
    // Carol's search used the service credential as the operator's fallback, and said so.
    expect(acted('ci-carol').map((r) => [r.mcp?.name, r.auth?.upstream])).toEqual([
      ['github_search_issues', 'service_fallback'],
    ]);
    // In user mode nothing acts as the plain service.
    expect(calls.filter((r) => r.auth?.upstream === 'service')).toEqual([]);
    const links = records.filter((r) => r.event.action === 'gatehouse/connect');
    expect(
      links
        .filter((r) => r.event.outcome === 'success')
        .map((r) => [r.user?.id, r.user?.effective?.name]),
    ).toEqual(
      expect.arrayContaining([
        ['ci-alice', 'alice'],
        ['ci-bob', 'bob'],
      ]),
    );
    expect(
      links.find((r) => r.user?.id === 'ci-mallory' && r.event.outcome === 'failure')?.gatehouse,
    ).toMatchObject({ refused: 'wrong_account', step: 'callback' });
    // No token, refresh token or code reached the trail, nor the log; nor the app's secret.
    expect(readFileSync(auditFile, 'utf8')).not.toMatch(/gh[ur]_|code=/);
    const logs = JSON.stringify(server.logs);
    expect(logs).not.toMatch(/gh[ur]_/);
    expect(logs).not.toContain(CLIENT.secret);
  });

  it('disconnects a person on their own word: the token revoked at GitHub, the grant gone', async () => {
    const { client, close } = await connectAs('alice');
    try {
      const done = await client.callTool({ name: 'github_disconnect', arguments: {} });
      expect(unframed(done.structuredContent)).toEqual({
        disconnected: true,
        account: 'alice',
        revoked: true,
      });
      expect(fake.requests.at(-1)).toMatch(/^DELETE \/applications\/Iv23liUserModeTest\/token/);
      const again = await client.callTool({
        name: 'github_list_issues',
        arguments: { repo: 'acme/web' },
      });
      expect(connectLink(again)).toBeDefined();
      const twice = await client.callTool({ name: 'github_disconnect', arguments: {} });
      expect(unframed(twice.structuredContent)).toEqual({ disconnected: false });
    } finally {
      await close();
    }
  });

  it("disconnects a person by the operator's command, once no instance holds the grant file", async () => {
    await link('alice');
    // Run asynchronously: the GitHub fake answers from this process.
    const command = async () =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [BIN, 'disconnect', '--api-key-principal', 'ci-alice'],
          { env: serverEnv, timeout: 30_000 },
          (error, stdout, stderr) =>
            resolve({ status: error === null ? 0 : (error.code as number), stdout, stderr }),
        );
      });
    const busy = await command();
    expect(busy.status).toBe(2);
    expect(busy.stderr).toContain('GATEHOUSE_GRANTS_FILE');
    expect(busy.stderr).toContain('is in use');
    await server.stop();
    const revokes = () => fake.requests.filter((r) => r.startsWith('DELETE /applications')).length;
    const before = revokes();
    const done = await command();
    expect(done.stderr).toBe('');
    expect(done.stdout).toContain(
      'ci-alice no longer acts as alice on GitHub; the token was revoked there',
    );
    expect(done.status).toBe(0);
    expect(revokes()).toBe(before + 1);
    expect((await command()).stdout).toContain('ci-alice had no GitHub account linked');
  });
});
