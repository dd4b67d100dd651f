// Linking a person's upstream account through /connect (ADR 0026), against the GitHub fake's
// web flow, with browsers that keep their own cookies: the link works for its owner, and a
// forwarded link, a forwarded vendor page, a replayed link or a tampered one links nothing.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { TestBrowser } from '@gatehouse/testkit';
import { startGitHubAppFake } from '@gatehouse/testkit/github';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { startTestIdp } from '@gatehouse/testkit/idp';
import type { TestIdp } from '@gatehouse/testkit/idp';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime.js';
import {
  Keyring,
  Vault,
  createConnect,
  fileGrantStore,
  upstreamOAuth,
} from '../src/identity/index.js';
import type { Connect, ConnectVendor, GrantOwner } from '../src/identity/index.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLIENT = { id: 'Iv23liConnectTest', secret: 'connect-test-secret' };
const SERVER = 'gatehouse-github';
const keyOwner = (subject: string): GrantOwner => ({
  server: SERVER,
  issuer: 'api-key',
  subject,
  upstream: 'github.com',
});
const alicesKey = keyOwner('ci-alice');

let fake: GitHubFake;
let idp: TestIdp;
let idpConfig: client.Configuration;
let http: Server;
let publicUrl: string;
let connect: Connect;
let vault: Vault;
const linked: Array<[GrantOwner, string]> = [];
const basic = `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;

function make(flowMs?: number, withIdp = false): { connect: Connect; vault: Vault } {
  const store = fileGrantStore(join(mkdtempSync(join(tmpdir(), 'connect-')), 'g.json'), 'V');
  const ring = Keyring.parse(`k1 ${randomBytes(32).toString('base64')}`, 'test');
  const v = new Vault(ring, store);
  const vendor: ConnectVendor = {
    name: 'GitHub',
    oauth: upstreamOAuth({
      authorizationEndpoint: `${fake.rootUrl}/login/oauth/authorize`,
      tokenEndpoint: `${fake.rootUrl}/login/oauth/access_token`,
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
    }),
    whoami: async (token) => {
      const me = (await (
        await fetch(`${fake.url}/user`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as { login: string; id: number };
      return { login: me.login, id: String(me.id) };
    },
    revoke: async (token) => {
      await fetch(`${fake.url}/applications/${CLIENT.id}/token`, {
        method: 'DELETE',
        headers: { authorization: basic, 'content-type': 'application/json' },
        body: JSON.stringify({ access_token: token }),
      });
    },
  };
  return {
    vault: v,
    connect: createConnect({
      server: SERVER,
      publicUrl,
      keyring: ring,
      vault: v,
      store,
      vendor,
      expectedLogins: new Map([['ci-alice', 'alice']]),
      logger: createLogger({ level: 'silent' }),
      ...(flowMs === undefined ? {} : { flowMs }),
      ...(withIdp ? { idp: { issuer: idp.issuer, config: async () => idpConfig } } : {}),
      onLinked: (owner, elicitation) => linked.push([owner, elicitation]),
    }),
  };
}

beforeAll(async () => {
  http = createServer((req, res) => {
    void connect.handle(req, res).then((handled) => {
      if (!handled) {
        res.writeHead(404);
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  publicUrl = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  fake = await startGitHubAppFake({
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`${publicUrl}/connect/${SERVER}/callback`],
      users: ['alice', 'bob'],
    },
  });
  idp = await startTestIdp({
    clients: [
      {
        clientId: 'gatehouse-connect',
        clientSecret: 'idp-client-secret',
        redirectUris: [`${publicUrl}/connect/${SERVER}/signed-in`],
      },
    ],
    accounts: ['alice', 'bob'],
  });
  idpConfig = await client.discovery(
    new URL(idp.issuer),
    'gatehouse-connect',
    'idp-client-secret',
    undefined,
    { execute: [client.allowInsecureRequests] },
  );
  ({ connect, vault } = make());
});

afterAll(async () => {
  await idp?.close();
  await fake?.close();
  await new Promise((resolve) => http?.close(resolve));
});

/** A browser that can sign in to the fake GitHub and to the IdP. */
class Browser extends TestBrowser {
  /** Signs in to the fake GitHub as `login`. */
  async signIn(login: string): Promise<this> {
    await this.go(`${fake.rootUrl}/login?login=${login}`);
    return this;
  }

  /** Signs in to the company's IdP as `login`. */
  async signInToIdp(login: string): Promise<this> {
    await this.go(`${idp.issuer}/sign-in?login=${login}`);
    return this;
  }
}

const octoLogin = async (token: string) =>
  (
    (await (
      await fetch(`${fake.url}/user`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { login?: string }
  ).login;

describe('linking through /connect', () => {
  it("links the key's own account, and says whom it linked", async () => {
    const browser = await new Browser().signIn('alice');
    const link = connect.link(alicesKey, 'elicit-1');
    expect(link).not.toContain('ci-alice'); // the flow handle is sealed
    const answer = await browser.go(link);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('Linked as alice');
    const grant = await vault.get(alicesKey);
    expect(grant?.account.login).toBe('alice');
    expect(await octoLogin(grant!.accessToken)).toBe('alice');
    expect(linked.at(-1)).toEqual([alicesKey, 'elicit-1']);
    // The link sent the browser to GitHub with PKCE and a state, and carried no token.
    const authorize = new URL(browser.visited.find((u) => u.includes('/login/oauth/authorize'))!);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('state')).toBeTruthy();
    expect(browser.visited.join(' ')).not.toMatch(/gh[ur]_/);
  });

  it('links nothing when the link is forwarded to someone signed in to another account', async () => {
    ({ connect, vault } = make());
    const bob = await new Browser().signIn('bob');
    const revocations = () =>
      fake.requests.filter((r) => r.startsWith(`DELETE /applications/${CLIENT.id}/token`)).length;
    const before = revocations();
    const answer = await bob.go(connect.link(alicesKey, 'elicit-2'));
    expect(answer.status).toBe(403);
    expect(answer.text).toContain('is not the one this link is for. Nothing was linked.');
    // The page names neither the key nor the account it expects.
    expect(answer.text).not.toMatch(/alice/);
    expect(await vault.get(alicesKey)).toBeUndefined();
    expect(revocations()).toBe(before + 1); // bob's fresh token was revoked at GitHub
  });

  it("links nothing when the vendor's page is forwarded: the callback needs the browser that started", async () => {
    ({ connect, vault } = make());
    const attacker = await new Browser().signIn('alice');
    // The attacker starts the flow and stops at GitHub's authorize page…
    const started = await attacker.go(connect.link(alicesKey, 'elicit-3'), false);
    expect(started.status).toBe(302);
    const authorize = await fetch(started.url, { redirect: 'manual' });
    const vendorPage = authorize.headers.get('location')!;
    // …and sends it to the victim, who is signed in to GitHub and consents.
    const issued = fake.oauth!.issued.length;
    const victim = await new Browser().signIn('alice');
    const answer = await victim.go(vendorPage);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('in the same browser. Nothing was linked.');
    expect(await vault.get(alicesKey)).toBeUndefined();
    expect(fake.oauth!.issued.length).toBe(issued); // the code was never exchanged
  });

  it('links once: the same link opened again is spent', async () => {
    ({ connect, vault } = make());
    const browser = await new Browser().signIn('alice');
    const link = connect.link(alicesKey, 'elicit-4');
    expect((await browser.go(link)).status).toBe(200);
    const first = (await vault.get(alicesKey))!.accessToken;
    const again = await browser.go(link);
    expect(again.status).toBe(409);
    expect(again.text).toContain('This link was used already');
    expect((await vault.get(alicesKey))!.accessToken).toBe(first);
  });

  it('refuses a tampered or expired link, an identity-provider principal, and a key with no login named', async () => {
    const browser = await new Browser().signIn('alice');
    const link = new URL(connect.link(alicesKey, 'elicit-5'));
    const flow = link.searchParams.get('flow')!;
    link.searchParams.set('flow', `${flow.slice(0, -2)}${flow.endsWith('A') ? 'B' : 'A'}A`);
    expect((await browser.go(link.href)).status).toBe(400);

    const short = make(1);
    const stale = short.connect.link(alicesKey, 'elicit-6');
    await new Promise((resolve) => setTimeout(resolve, 5));
    ({ connect } = short);
    expect((await browser.go(stale)).status).toBe(400);

    ({ connect, vault } = make());
    const viaIdp = await browser.go(
      connect.link({ ...alicesKey, issuer: 'https://idp.example.com' }, 'elicit-7'),
      false,
    );
    expect(viaIdp.status).toBe(403);
    expect(viaIdp.text).toContain('sign the browser in with it first');
    const unnamed = await browser.go(connect.link(keyOwner('ci-other'), 'elicit-8'), false);
    expect(unnamed.status).toBe(403);
    expect(unnamed.text).toContain('has not been told which GitHub account this API key links to');
  });

  it('answers only its own paths', async () => {
    const browser = new Browser();
    expect((await browser.go(`${publicUrl}/connect/${SERVER}/other`)).status).toBe(404);
    expect((await browser.go(`${publicUrl}/elsewhere`)).status).toBe(404);
  });
});

describe('linking for a person the IdP vouched for', () => {
  const alice: GrantOwner = {
    server: SERVER,
    issuer: '',
    subject: 'alice',
    upstream: 'github.com',
  };
  const owner = () => ({ ...alice, issuer: idp.issuer });

  it('signs the browser in with the IdP first, then links their account', async () => {
    ({ connect, vault } = make(undefined, true));
    const browser = await (await new Browser().signInToIdp('alice')).signIn('alice');
    const answer = await browser.go(connect.link(owner(), 'elicit-idp-1'));
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('Linked as alice');
    expect((await vault.get(owner()))?.account.login).toBe('alice');
    // The IdP was asked first, with PKCE and a nonce, and then GitHub.
    const order = browser.visited.map((u) => new URL(u).origin);
    expect(order.indexOf(idp.issuer)).toBeLessThan(order.indexOf(new URL(fake.rootUrl).origin));
    const auth = new URL(browser.visited.find((u) => u.startsWith(`${idp.issuer}/auth`))!);
    expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
    expect(auth.searchParams.get('nonce')).toBeTruthy();
  });

  it('links nothing for a colleague who opens the forwarded link, and never sends them to GitHub', async () => {
    ({ connect, vault } = make(undefined, true));
    const bob = await (await new Browser().signInToIdp('bob')).signIn('bob');
    const authorizes = () =>
      fake.requests.filter((r) => r.startsWith('GET /login/oauth/authorize')).length;
    const before = authorizes();
    const answer = await bob.go(connect.link(owner(), 'elicit-idp-2'));
    expect(answer.status).toBe(403);
    expect(answer.text).toContain('someone other than the person this link was made for');
    expect(answer.text).not.toMatch(/alice/);
    expect(authorizes()).toBe(before);
    expect(await vault.get(owner())).toBeUndefined();
  });

  it('links nothing for a browser the IdP cannot sign in, or a flow of another issuer', async () => {
    ({ connect, vault } = make(undefined, true));
    const stranger = await new Browser().signIn('alice'); // signed in to GitHub, not the IdP
    expect((await stranger.go(connect.link(owner(), 'elicit-idp-3'))).status).toBe(401);
    expect(await vault.get(owner())).toBeUndefined();
    const other = await stranger.go(
      connect.link({ ...owner(), issuer: 'https://other-idp.example.com' }, 'elicit-idp-4'),
      false,
    );
    expect(other.status).toBe(403);
  });
});
