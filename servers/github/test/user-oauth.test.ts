// User mode for callers signed in with the company's identity provider (ADR 0026): the built
// GitHub server takes JWT access tokens of the IdP's issuer, and its /connect pages sign the
// browser in with that same IdP — a real OpenID provider (`oidc-provider`), discovered from the
// configuration — before GitHub is asked. The browser must be the caller: a link forwarded to
// someone else, signed in as themselves, links nothing.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  TestBrowser,
  connectHttp,
  freePort,
  spawnServer,
  startTestIssuer,
} from '@gatehouse/testkit';
import type { ServerProcess, TestIssuer } from '@gatehouse/testkit';
import { startGitHubAppFake } from '@gatehouse/testkit/github';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { startTestIdp } from '@gatehouse/testkit/idp';
import type { TestIdp } from '@gatehouse/testkit/idp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { text } from './helpers.ts';

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const GITHUB_APP = { clientId: 'Iv23liOAuthTest', clientSecret: randomBytes(16).toString('hex') };
const CONNECT = { clientId: 'gatehouse-connect', clientSecret: randomBytes(16).toString('hex') };

let fake: GitHubFake;
let idp: TestIdp;
let tokens: TestIssuer;
let server: ServerProcess;
let publicUrl: string;

beforeAll(async () => {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  publicUrl = `${origin}/mcp`;
  fake = await startGitHubAppFake({
    oauth: {
      ...GITHUB_APP,
      callbackUrls: [`${origin}/connect/gatehouse-github/callback`],
      users: ['alice', 'bob'],
    },
  });
  idp = await startTestIdp({
    clients: [{ ...CONNECT, redirectUris: [`${origin}/connect/gatehouse-github/signed-in`] }],
    accounts: ['alice', 'bob'],
  });
  // The IdP's access tokens for the MCP endpoint: signed by a key of the company's (its JWKS),
  // issued in the IdP's name — what an authorization server in front of the IdP hands out.
  tokens = await startTestIssuer();
  const dir = mkdtempSync(join(tmpdir(), 'github-oauth-user-'));
  const keys = join(dir, 'vault.keys');
  writeFileSync(keys, `k1 ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  server = await spawnServer(process.execPath, [BIN], {
    env: {
      PATH: process.env.PATH ?? '',
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_HOST: '127.0.0.1',
      GATEHOUSE_PORT: String(port),
      GATEHOUSE_PUBLIC_URL: publicUrl,
      GATEHOUSE_AUTH: 'oauth',
      GATEHOUSE_OAUTH_ISSUER: idp.issuer,
      GATEHOUSE_OAUTH_JWKS_URL: tokens.jwksUrl,
      GATEHOUSE_IDENTITY: 'user',
      GATEHOUSE_VAULT_KEYS_FILE: keys,
      GATEHOUSE_GRANTS_FILE: join(dir, 'grants.json'),
      GATEHOUSE_CONNECT_CLIENT_ID: CONNECT.clientId,
      GATEHOUSE_CONNECT_CLIENT_SECRET: CONNECT.clientSecret,
      GITHUB_OAUTH_CLIENT_ID: GITHUB_APP.clientId,
      GITHUB_OAUTH_CLIENT_SECRET: GITHUB_APP.clientSecret,
      GITHUB_API_URL: fake.url,
      GITHUB_WEB_URL: fake.rootUrl,
      GITHUB_REPOS: 'acme/api',
    },
  });
});

afterAll(async () => {
  await server?.stop();
  await Promise.all([fake?.close(), idp?.close(), tokens?.close()]);
});

/** One call as the person `sub` of the IdP, with an access token for this server. */
async function callAs(sub: string) {
  const token = await tokens.mint({
    iss: idp.issuer,
    sub,
    aud: publicUrl,
    scope: 'github:read',
    exp: Math.floor(Date.now() / 1000) + 600,
  });
  const { client, close } = await connectHttp(server.url!, {
    headers: { authorization: `Bearer ${token}` },
  });
  try {
    return await client.callTool({ name: 'github_list_issues', arguments: { repo: 'acme/api' } });
  } finally {
    await close();
  }
}

/** A browser signed in to the IdP and to GitHub as `login`. */
async function browserOf(login: string): Promise<TestBrowser> {
  const browser = new TestBrowser();
  await browser.go(`${idp.issuer}/sign-in?login=${login}`);
  await browser.go(`${fake.rootUrl}/login?login=${login}`);
  return browser;
}

const linkIn = (result: unknown) => /open (\S+) in your browser/.exec(text(result))?.[1];

it('signs the browser in with the same IdP before GitHub, then acts as the person', async () => {
  const asked = await callAs('alice');
  const browser = await browserOf('alice');
  const linked = await browser.go(linkIn(asked)!);
  expect(linked.text).toContain('Linked as alice');
  // The IdP came first (discovered from GATEHOUSE_OAUTH_ISSUER), GitHub second.
  const idpAt = browser.visited.findIndex((u) => u.startsWith(`${idp.issuer}/auth`));
  const githubAt = browser.visited.findIndex((u) => u.includes('/login/oauth/authorize'));
  expect(idpAt).toBeGreaterThan(-1);
  expect(githubAt).toBeGreaterThan(idpAt);
  expect(idp.signIns).toContain('alice');
  expect((await callAs('alice')).isError).toBeFalsy();
});

it('links nothing when another person opens the link, signed in as themselves', async () => {
  const asked = await callAs('bob');
  const forwarded = await (await browserOf('alice')).go(linkIn(asked)!);
  expect(forwarded.status).toBe(403);
  expect(forwarded.text).toContain('someone other than the person this link was made for');
  expect(forwarded.text).not.toContain('bob');
  expect(linkIn(await callAs('bob'))).toBeDefined();
});
