import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackSeed, startSlackFake } from '../src/slack.js';
import type { SlackFake } from '../src/slack.js';

// The Slack fake's user tokens (slack-oauth.ts cites the Slack pages each rule models): the v2
// flow with `user_scope`, the token under `authed_user`, twelve-hour tokens that rotate, a spent
// refresh token refused, `auth.revoke` — and a call with a person's token acts as that person:
// their channels, their posts.

const APP = { clientId: '1234.5678', clientSecret: randomBytes(12).toString('hex') };
const CALLBACK = 'https://mcp.example.com/connect/gatehouse-slack/callback';
const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';
let fake: SlackFake;

beforeAll(async () => {
  fake = await startSlackFake({
    world: slackSeed(),
    tokens: { 'xoxb-1-2-bot': { scopes: ['channels:read'] } },
    oauth: { ...APP, callbackUrls: [CALLBACK], users: [ALICE, BOB] },
  });
});
afterAll(() => fake.close());

/** A Slack method over the wire, form-encoded, with `token` as the bearer (or none). */
async function call(method: string, body: Record<string, string>, token?: string) {
  const response = await fetch(`${fake.url}${method}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: new URLSearchParams(body),
  });
  const answer = (await response.json()) as Record<string, any>;
  // Slack's methods fail with ok:false and HTTP 200, a refused token too.
  expect(response.status).toBe(200);
  return answer;
}

/** `user` signs in and authorizes the app: the code Slack sends to the callback. */
async function authorize(user: string, verifier: string): Promise<string> {
  const signIn = await fetch(`${fake.rootUrl}/signin?user=${user}`, { redirect: 'manual' });
  const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
  const url = new URL('/oauth/v2/authorize', fake.rootUrl);
  for (const [k, v] of Object.entries({
    client_id: APP.clientId,
    user_scope: 'channels:history,chat:write',
    redirect_uri: CALLBACK,
    state: 'st-1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }))
    url.searchParams.set(k, v);
  const answer = await fetch(url, { redirect: 'manual', headers: { cookie } });
  const to = new URL(answer.headers.get('location')!);
  expect(to.origin + to.pathname).toBe(CALLBACK);
  expect(to.searchParams.get('state')).toBe('st-1');
  return to.searchParams.get('code')!;
}

async function link(user: string) {
  const verifier = randomBytes(32).toString('base64url');
  const code = await authorize(user, verifier);
  return call('oauth.v2.access', {
    ...{ client_id: APP.clientId, client_secret: APP.clientSecret },
    code,
    code_verifier: verifier,
    redirect_uri: CALLBACK,
  });
}

describe("the Slack fake's user tokens", () => {
  it('answers a code with the user token under authed_user, and refuses a code twice', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const code = await authorize(ALICE, verifier);
    const params = {
      client_id: APP.clientId,
      client_secret: APP.clientSecret,
      code,
      code_verifier: verifier,
      redirect_uri: CALLBACK,
    };
    const answer = await call('oauth.v2.access', params);
    expect(answer).toMatchObject({
      ok: true,
      authed_user: {
        id: ALICE,
        token_type: 'user',
        access_token: expect.stringMatching(/^xoxe\.xoxp-1-/),
        refresh_token: expect.stringMatching(/^xoxe-1-/),
        expires_in: 43_200,
      },
      team: { id: 'T0ACME0001' },
    });
    expect(answer.access_token).toBeUndefined(); // no bot token: only user scopes were asked
    expect(await call('oauth.v2.access', params)).toEqual({ ok: false, error: 'invalid_code' });
    expect(await call('oauth.v2.access', { ...params, client_secret: 'wrong', code: 'x' })).toEqual(
      { ok: false, error: 'bad_client_secret' },
    );
  });

  it('acts as the person: their private channels only, their name on what they post', async () => {
    const alice = (await link(ALICE)).authed_user.access_token as string;
    const bob = (await link(BOB)).authed_user.access_token as string;
    expect(await call('auth.test', {}, bob)).toMatchObject({ ok: true, user_id: BOB });
    expect((await call('auth.test', {}, bob)).bot_id).toBeUndefined();
    // #secret (G0SECRET01) has the bot and Alice in it, not Bob.
    expect((await call('conversations.history', { channel: 'G0SECRET01' }, alice)).ok).toBe(true);
    expect(await call('conversations.history', { channel: 'G0SECRET01' }, bob)).toEqual({
      ok: false,
      error: 'channel_not_found',
    });
    const listed = await call('conversations.list', { types: 'private_channel' }, bob);
    expect(listed.channels).toEqual([]);
    // #random has Alice in it and not the bot: she can read it, the bot cannot.
    expect((await call('conversations.history', { channel: 'C0RANDOM01' }, alice)).ok).toBe(true);
    const posted = await call('chat.postMessage', { channel: 'C0GENERAL1', text: 'hi' }, bob);
    expect(posted.message).toMatchObject({ user: BOB });
    expect(posted.message.bot_id).toBeUndefined();
    expect(fake.channel('C0GENERAL1').messages.at(-1)?.user).toBe(BOB);
  });

  it('rotates: a refresh gives a new pair and spends both old tokens; expiry and revoke end a token', async () => {
    const first = (await link(ALICE)).authed_user;
    const refresh = {
      client_id: APP.clientId,
      client_secret: APP.clientSecret,
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token as string,
    };
    const second = await call('oauth.v2.access', refresh);
    expect(second).toMatchObject({
      ok: true,
      token_type: 'user',
      user_id: ALICE,
      access_token: expect.stringMatching(/^xoxe\.xoxp-1-/),
    });
    expect(await call('oauth.v2.access', refresh)).toEqual({
      ok: false,
      error: 'invalid_refresh_token',
    });
    expect(await call('auth.test', {}, first.access_token)).toEqual({
      ok: false,
      error: 'invalid_auth',
    });
    expect((await call('auth.test', {}, second.access_token)).ok).toBe(true);
    fake.oauth!.advance(12 * 3600 + 1);
    expect((await call('auth.test', {}, second.access_token)).error).toBe('token_expired');
    const fresh = (await link(BOB)).authed_user.access_token as string;
    expect(await call('auth.revoke', {}, fresh)).toEqual({ ok: true, revoked: true });
    expect((await call('auth.test', {}, fresh)).error).toBe('invalid_auth');
  });
});
