// The Jira fake's Atlassian OAuth 2.0 (3LO) app, against Atlassian's pages (jira-oauth.ts): the
// authorize step's audience, the token endpoint's answers and errors, rotating refresh tokens
// with their 10-minute leeway (and the whole authorization revoked by a reuse after it), the
// gateway as the only address a 3LO token is taken at, and each person's own projects.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jiraSeed, startJiraFake } from '../src/jira.js';
import type { JiraFake } from '../src/jira.js';

const APP = { clientId: 'atl-client-0001', clientSecret: randomBytes(12).toString('hex') };
const CALLBACK = 'https://mcp.example.com/connect/gatehouse-jira/callback';
let fake: JiraFake;

beforeAll(async () => {
  const world = jiraSeed();
  world.users.find((u) => u.accountId === '557058:alice')!.projects = ['OPS'];
  fake = await startJiraFake({
    world,
    credentials: [],
    oauth: {
      ...APP,
      callbackUrls: [CALLBACK],
      users: ['557058:alice', '557058:bob'],
      elsewhere: ['557058:bob'],
    },
  });
});
afterAll(() => fake.close());

/** `who` signs in and consents: where the browser is sent back (the callback with its code). */
async function authorize(who: string, query: Record<string, string>): Promise<Response> {
  const signIn = await fetch(`${fake.rootUrl}/login?user=${who}`, { redirect: 'manual' });
  const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
  const url = new URL('/authorize', fake.rootUrl);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return fetch(url, { redirect: 'manual', headers: { cookie } });
}

const CONSENT = {
  audience: 'api.atlassian.com',
  client_id: APP.clientId,
  scope: 'read:jira-work read:me offline_access',
  redirect_uri: CALLBACK,
  state: 'st',
  response_type: 'code',
  prompt: 'consent',
};

/** A code for `who`, exchanged: the token endpoint's answer. */
async function link(who: string) {
  const back = (await authorize(who, CONSENT)).headers.get('location')!;
  const code = new URL(back).searchParams.get('code')!;
  return token({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK });
}

async function token(body: Record<string, string>) {
  const answer = await fetch(`${fake.rootUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: APP.clientId, client_secret: APP.clientSecret, ...body }),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

const get = (path: string, access: string) =>
  fetch(`${fake.rootUrl}${path}`, { headers: { authorization: `Bearer ${access}` } });

it('refuses an authorize request without the api.atlassian.com audience', async () => {
  const { audience: _, ...noAudience } = CONSENT;
  const answer = await authorize('557058:alice', noAudience);
  expect(answer.status).toBe(400);
  expect(await answer.text()).toContain('audience');
});

it('takes a 3LO token at the gateway for the site’s cloud id only, and names the account and its sites', async () => {
  const { status, body } = await link('557058:alice');
  expect(status).toBe(200);
  expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
  const access = body.access_token as string;
  const sites = (await (await get('/oauth/token/accessible-resources', access)).json()) as Array<{
    id: string;
    url: string;
  }>;
  expect(sites).toEqual([expect.objectContaining({ id: fake.cloudId, url: fake.url })]);
  expect(await (await get('/me', access)).json()).toMatchObject({
    account_id: '557058:alice',
    email: 'alice@acme.example',
  });
  expect((await get(`/ex/jira/${fake.cloudId}/rest/api/3/myself`, access)).status).toBe(200);
  // Not at the site's own address, nor for another cloud id.
  expect((await get('/rest/api/3/myself', access)).status).toBe(401);
  expect(
    (await get('/ex/jira/00000000-0000-4000-8000-000000000000/rest/api/3/myself', access)).status,
  ).toBe(404);
  // Her own projects only: OPS, not WEB.
  expect((await get(`/ex/jira/${fake.cloudId}/rest/api/3/issue/OPS-1`, access)).status).toBe(200);
  expect((await get(`/ex/jira/${fake.cloudId}/rest/api/3/issue/WEB-1`, access)).status).toBe(404);
});

it('lists another site for a person who consented for that one only', async () => {
  const { body } = await link('557058:bob');
  const sites = (await (
    await get('/oauth/token/accessible-resources', body.access_token as string)
  ).json()) as Array<{ id: string }>;
  expect(sites.map((s) => s.id)).not.toContain(fake.cloudId);
});

it('rotates refresh tokens: a reuse within ten minutes answers again, after them revokes everything', async () => {
  const first = (await link('557058:alice')).body;
  const refresh = { grant_type: 'refresh_token', refresh_token: first.refresh_token as string };
  const second = await token(refresh);
  expect(second.status).toBe(200);
  expect(second.body.refresh_token).not.toBe(first.refresh_token);
  // Within the leeway the used token still answers, with the same new pair.
  expect((await token(refresh)).body.access_token).toBe(second.body.access_token);
  fake.oauth!.advance(11 * 60);
  expect(await token(refresh)).toEqual({
    status: 403,
    body: { error: 'invalid_grant', error_description: 'Unknown or invalid refresh token.' },
  });
  // The late reuse revoked the authorization: the newest refresh token is refused too.
  const newest = {
    grant_type: 'refresh_token',
    refresh_token: second.body.refresh_token as string,
  };
  expect((await token(newest)).status).toBe(403);
  expect((await get('/me', second.body.access_token as string)).status).toBe(401);
});
