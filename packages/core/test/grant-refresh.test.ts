// Keeping a grant (ADR 0026): openid-client against the GitHub fake's token endpoint, two
// replicas sharing one Redis. A refresh token rotates, so two replicas refreshing at once would
// lose the grant: exactly one refresh happens, and every caller gets its result.
import { randomBytes } from 'node:crypto';
import { Octokit } from '@octokit/rest';
import { startRedis } from '@gatehouse/testkit';
import type { TestRedis } from '@gatehouse/testkit';
import { startGitHubAppFake } from '@gatehouse/testkit/github';
import type { GitHubFake } from '@gatehouse/testkit/github';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Keyring,
  Vault,
  fileGrantStore,
  grantOf,
  redisGrantStore,
  refreshGrant,
  upstreamOAuth,
} from '../src/identity/index.js';
import type { Grant, GrantOwner } from '../src/identity/index.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLIENT = { id: 'Iv23liRefreshTest', secret: 'refresh-test-secret' };
const CALLBACK = 'https://gatehouse.example.test/connect/github/callback';
const owner: GrantOwner = {
  server: 'gatehouse-github',
  issuer: 'https://idp.example.com',
  subject: 'alice',
  upstream: 'github.com',
};

let fake: GitHubFake;
let redis: TestRedis;
let config: client.Configuration;
const ring = Keyring.parse(`k1 ${randomBytes(32).toString('base64')}`, 'test');

beforeAll(async () => {
  redis = await startRedis();
  fake = await startGitHubAppFake({
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [CALLBACK],
      users: ['alice'],
    },
  });
  config = upstreamOAuth({
    authorizationEndpoint: `${fake.rootUrl}/login/oauth/authorize`,
    tokenEndpoint: `${fake.rootUrl}/login/oauth/access_token`,
    clientId: CLIENT.id,
    clientSecret: CLIENT.secret,
  });
});

afterAll(async () => {
  await fake?.close();
  await redis?.stop();
});

/** alice's grant through the web flow, with openid-client's PKCE and state. */
async function connectAlice(): Promise<Grant> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  const session = fake.oauth!.signIn('alice')!;
  const answer = await fetch(url, {
    redirect: 'manual',
    headers: { cookie: `fake_gh_session=${session}` },
  });
  const callback = new URL(answer.headers.get('location')!);
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  return grantOf(tokens, { login: 'alice', id: '1' });
}

const login = async (grant: Grant | undefined) =>
  (
    await new Octokit({
      auth: grant!.accessToken,
      baseUrl: fake.url,
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    }).rest.users.getAuthenticated()
  ).data.login;

const refreshes = () => fake.oauth!.issued.filter((i) => i.grant === 'refresh_token').length;
const expiring = (grant: Grant): Grant => ({ ...grant, expiresAt: Date.now() + 30_000 });
const refresh = (grant: Grant) => refreshGrant(config, grant);

describe('a grant about to expire', () => {
  it('is refreshed once, whatever the number of replicas and calls asking at the same time', async () => {
    const grant = await connectAlice();
    const service = `refresh-${randomBytes(4).toString('hex')}`;
    const [one, two] = [
      new Vault(ring, redisGrantStore(redis.url, service)),
      new Vault(ring, redisGrantStore(redis.url, service)),
    ];
    // Far from expiry: no refresh at all.
    await one.put(owner, grant);
    const before = refreshes();
    expect((await two.fresh(owner, refresh))?.accessToken).toBe(grant.accessToken);
    expect(refreshes()).toBe(before);

    await one.put(owner, expiring(grant));
    const answers = await Promise.all(
      [one, two, one, two, two, one].map((vault) => vault.fresh(owner, refresh)),
    );
    expect(refreshes()).toBe(before + 1);
    const tokens = new Set(answers.map((a) => a?.accessToken));
    expect(tokens.size).toBe(1);
    expect(tokens.has(grant.accessToken)).toBe(false);
    expect(await login(answers[0])).toBe('alice');
    // What the store holds is the new pair, and it opens on either replica.
    expect((await one.get(owner))?.refreshToken).toBe(answers[0]?.refreshToken);
    await Promise.all([one.close(), two.close()]);
  });

  it('is refreshed once in one process on a file', async () => {
    const vault = new Vault(
      ring,
      fileGrantStore(join(mkdtempSync(join(tmpdir(), 'grant-')), 'grants.json'), 'V'),
    );
    await vault.put(owner, expiring(await connectAlice()));
    const before = refreshes();
    const answers = await Promise.all([1, 2, 3].map(() => vault.fresh(owner, refresh)));
    expect(refreshes()).toBe(before + 1);
    expect(new Set(answers.map((a) => a?.accessToken)).size).toBe(1);
  });

  it('is deleted when GitHub refuses its refresh token, and kept when GitHub cannot be reached', async () => {
    const vault = new Vault(ring, redisGrantStore(redis.url, `gone-${Date.now()}`));
    const grant = expiring(await connectAlice());
    await vault.put(owner, grant);
    // Unreachable: the call fails, the grant stays for the next one.
    const closed = upstreamOAuth({
      authorizationEndpoint: 'http://127.0.0.1:9/authorize',
      tokenEndpoint: 'http://127.0.0.1:9/token',
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
    });
    await expect(vault.fresh(owner, (g) => refreshGrant(closed, g))).rejects.toThrow();
    expect(await vault.get(owner)).toEqual(grant);
    // Spent elsewhere (another deployment, a copy): GitHub answers bad_refresh_token, with 200.
    await refresh(grant);
    expect(await vault.fresh(owner, refresh)).toBeUndefined();
    expect(await vault.get(owner)).toBeUndefined();
    // A grant without a refresh token cannot be renewed either.
    await vault.put(owner, { ...expiring(await connectAlice()), refreshToken: undefined });
    expect(await vault.fresh(owner, refresh)).toBeUndefined();
    expect(await vault.get(owner)).toBeUndefined();
    await vault.close();
  });
});
