// A vendor whose token answer is not OAuth 2's spelling (ADR 0026): Slack puts a user token under
// `authed_user` and fails with `ok: false` and HTTP 200. `upstreamOAuth`'s `tokenAnswer` maps the
// answer, and `openid-client` then exchanges the code and refreshes the grant as for any vendor —
// against the Slack fake's user tokens, with its rotation.
import { createHash, randomBytes } from 'node:crypto';
import { slackSeed, startSlackFake } from '@gatehouse/testkit/slack';
import type { SlackFake } from '@gatehouse/testkit/slack';
import * as client from 'openid-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GrantRevokedError, grantOf, refreshGrant, upstreamOAuth } from '@gatehouse/core/identity';
import { slackTokenAnswer } from '../src/identity.ts';

const APP = { clientId: '1234.5678', clientSecret: randomBytes(12).toString('hex') };
const CALLBACK = 'https://mcp.example.com/connect/gatehouse-slack/callback';
let fake: SlackFake;

beforeAll(async () => {
  fake = await startSlackFake({
    world: slackSeed(),
    tokens: {},
    oauth: { ...APP, callbackUrls: [CALLBACK], users: ['U0ALICE001'] },
  });
});
afterAll(() => fake.close());

it('exchanges a Slack code for the user token, refreshes it once, and reports a spent refresh as gone', async () => {
  const config = upstreamOAuth({
    authorizationEndpoint: `${fake.rootUrl}/oauth/v2/authorize`,
    tokenEndpoint: `${fake.url}oauth.v2.access`,
    ...APP,
    tokenAnswer: slackTokenAnswer,
  });
  // Alice signs in and authorizes; the browser would carry the code to the callback.
  const verifier = client.randomPKCECodeVerifier();
  const signIn = await fetch(`${fake.rootUrl}/signin?user=U0ALICE001`, { redirect: 'manual' });
  const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
  const authorize = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    user_scope: 'channels:history',
    state: 'st',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const back = (await fetch(authorize, { redirect: 'manual', headers: { cookie } })).headers.get(
    'location',
  )!;
  const tokens = await client.authorizationCodeGrant(config, new URL(back), {
    pkceCodeVerifier: verifier,
    expectedState: 'st',
  });
  const grant = grantOf(tokens, { login: 'alice', id: 'U0ALICE001' });
  expect(grant.accessToken).toMatch(/^xoxe\.xoxp-1-/);
  expect(grant.expiresAt! - Date.now()).toBeGreaterThan(11 * 3600_000);

  const renewed = await refreshGrant(config, grant);
  expect(renewed.accessToken).not.toBe(grant.accessToken);
  expect(renewed.account).toEqual(grant.account);
  // The refresh token is spent: the grant is gone, not merely failing.
  await expect(refreshGrant(config, grant)).rejects.toBeInstanceOf(GrantRevokedError);
});
