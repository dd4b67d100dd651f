import { createHash, randomBytes } from 'node:crypto';
import { Octokit } from '@octokit/rest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubSeed, startGitHubAppFake, validateGitHubResponses } from '../src/github.js';
import type { GitHubFake } from '../src/github.js';

// A GitHub App's user access tokens in the fake (github-oauth.ts cites the GitHub page of each
// rule): the web application flow with PKCE, what a user token reaches, expiry, rotation and
// revocation — driven with plain HTTP as a browser and a server would, and Octokit for the API.

const CLIENT = { id: 'Iv23liFakeClient', secret: 'fake-client-secret' };
const CALLBACK = 'https://gatehouse.example.test/connect/github/callback';

let fake: GitHubFake;

beforeAll(async () => {
  const repos = githubSeed();
  // alice may write to the private acme/web; bob is no collaborator anywhere private.
  repos.find((r) => r.name === 'web')!.collaborators.alice = 'write';
  fake = await startGitHubAppFake({
    repos,
    installed: ['acme/api', 'acme/web'],
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [CALLBACK],
      users: ['alice', 'bob'],
    },
  });
});

afterAll(async () => {
  await fake?.close();
});

/** A browser: keeps the fake's cookie, follows its redirects, stops where one leaves it. */
async function browse(start: string, cookie = ''): Promise<{ status: number; location?: string }> {
  let url = start;
  for (let hops = 0; hops < 5; hops++) {
    const answer = await fetch(url, { redirect: 'manual', headers: { cookie } });
    const set = answer.headers.get('set-cookie');
    if (set !== null) cookie = set.split(';')[0]!;
    const location = answer.headers.get('location');
    if (location === null) return { status: answer.status };
    const next = new URL(location, url);
    if (next.origin !== new URL(fake.rootUrl).origin) return { status: answer.status, location };
    url = next.href;
  }
  throw new Error('too many redirects');
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function authorizeUrl(extra: Record<string, string> = {}): string {
  const url = new URL('/login/oauth/authorize', fake.rootUrl);
  for (const [k, v] of Object.entries({ client_id: CLIENT.id, redirect_uri: CALLBACK, ...extra }))
    url.searchParams.set(k, v);
  return url.href;
}

async function exchange(params: Record<string, string>, json = true) {
  const answer = await fetch(new URL('/login/oauth/access_token', fake.rootUrl), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(json ? { accept: 'application/json' } : {}),
    },
    body: new URLSearchParams({
      client_id: CLIENT.id,
      client_secret: CLIENT.secret,
      ...params,
    }).toString(),
  });
  expect(answer.status).toBe(200); // errors too, as GitHub answers them
  return json
    ? ((await answer.json()) as Record<string, unknown>)
    : Object.fromEntries(new URLSearchParams(await answer.text()));
}

/** The whole web flow for `login`: signed in, authorized, the code exchanged. */
async function connect(login: string) {
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const target = new URL(
    authorizeUrl({ state, code_challenge: challenge, code_challenge_method: 'S256' }),
  );
  const signIn = new URL('/login', fake.rootUrl);
  signIn.searchParams.set('login', login);
  signIn.searchParams.set('return_to', target.pathname + target.search);
  const back = await browse(signIn.href);
  const callback = new URL(back.location!);
  expect(callback.origin + callback.pathname).toBe(CALLBACK);
  expect(callback.searchParams.get('state')).toBe(state);
  return exchange({
    code: callback.searchParams.get('code')!,
    redirect_uri: CALLBACK,
    code_verifier: verifier,
  });
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const api = (token: string) => new Octokit({ auth: token, baseUrl: fake.url, log: quiet });
const status = (promise: Promise<unknown>) =>
  promise.then(
    () => 200,
    (error: { status?: number }) => error.status,
  );

describe("the fake's GitHub App user access tokens", () => {
  it("are issued through the web flow with PKCE, with GitHub's lifetimes", async () => {
    const tokens = await connect('alice');
    expect(tokens).toMatchObject({
      access_token: expect.stringMatching(/^ghu_/),
      refresh_token: expect.stringMatching(/^ghr_/),
      expires_in: 28_800,
      refresh_token_expires_in: 15_811_200,
      token_type: 'bearer',
      scope: '',
    });
    const me = await api(tokens.access_token as string).rest.users.getAuthenticated();
    expect(me.data.login).toBe('alice');
  });

  it('reach what both the app and the user can: a private repository of neither is a 404, a public one outside the app is read-only', async () => {
    const alice = api((await connect('alice')).access_token as string);
    const bob = api((await connect('bob')).access_token as string);
    expect(
      await status(alice.rest.issues.get({ owner: 'acme', repo: 'web', issue_number: 1 })),
    ).toBe(200);
    expect(await status(bob.rest.issues.get({ owner: 'acme', repo: 'web', issue_number: 1 }))).toBe(
      404,
    );
    // acme/secret: the user… nor the app: 404 for both.
    expect(
      await status(alice.rest.issues.get({ owner: 'acme', repo: 'secret', issue_number: 1 })),
    ).toBe(404);
    // other/lib is public but the app is not installed there: read yes, write no.
    expect(
      await status(alice.rest.issues.get({ owner: 'other', repo: 'lib', issue_number: 1 })),
    ).toBe(200);
    const refused = await alice.rest.issues
      .create({ owner: 'other', repo: 'lib', title: 'x' })
      .catch((error: { status: number; message: string }) => error);
    expect(refused).toMatchObject({
      status: 403,
      message: expect.stringContaining('Resource not accessible by integration'),
    });
    // The author of what a user token writes is the user.
    const created = await alice.rest.issues.create({
      owner: 'acme',
      repo: 'web',
      title: 'By alice',
    });
    expect(created.data.user?.login).toBe('alice');
    expect(validateGitHubResponses(fake.responses)).toEqual([]);
  });

  it('refuse a code used twice, a wrong verifier, an expired code and an unregistered callback', async () => {
    const { verifier, challenge } = pkce();
    const session = fake.oauth!.signIn('alice')!;
    const cookie = `fake_gh_session=${session}`;
    const codeOf = async (extra: Record<string, string> = {}) =>
      new URL(
        (
          await browse(
            authorizeUrl({ code_challenge: challenge, code_challenge_method: 'S256', ...extra }),
            cookie,
          )
        ).location!,
      ).searchParams.get('code')!;
    const bad = { error: 'bad_verification_code' };

    const code = await codeOf();
    expect(
      await exchange({ code, redirect_uri: CALLBACK, code_verifier: 'not-the-verifier' }),
    ).toMatchObject(bad);
    expect(await exchange({ code, redirect_uri: CALLBACK, code_verifier: verifier })).toMatchObject(
      bad,
    ); // spent by the try

    const again = await codeOf();
    expect(
      await exchange({ code: again, redirect_uri: CALLBACK, code_verifier: verifier }),
    ).toHaveProperty('access_token');
    expect(
      await exchange({ code: again, redirect_uri: CALLBACK, code_verifier: verifier }),
    ).toMatchObject(bad);

    const late = await codeOf();
    fake.oauth!.advance(601);
    expect(
      await exchange({ code: late, redirect_uri: CALLBACK, code_verifier: verifier }),
    ).toMatchObject(bad);

    const elsewhere = await browse(
      authorizeUrl({ redirect_uri: 'https://evil.example/cb' }),
      cookie,
    );
    expect(elsewhere).toEqual({ status: 400 });
    const plain = await browse(
      authorizeUrl({ code_challenge: challenge, code_challenge_method: 'plain' }),
      cookie,
    );
    expect(plain).toEqual({ status: 400 });
    expect(await exchange({ code: await codeOf(), client_secret: 'wrong' })).toMatchObject({
      error: 'incorrect_client_credentials',
    });
  });

  it('send a browser with no session to sign in first, and return it only to a path of its own', async () => {
    const first = await fetch(authorizeUrl(), { redirect: 'manual' });
    expect(first.status).toBe(302);
    expect(first.headers.get('location')).toMatch(
      /^\/login\?return_to=%2Flogin%2Foauth%2Fauthorize/,
    );
    for (const away of ['https://evil.example/x', '//evil.example/x']) {
      const signIn = new URL('/login', fake.rootUrl);
      signIn.searchParams.set('login', 'alice');
      signIn.searchParams.set('return_to', away);
      const answer = await fetch(signIn, { redirect: 'manual' });
      expect(answer.headers.get('location')).toBe('/');
    }
    const stranger = new URL('/login', fake.rootUrl);
    stranger.searchParams.set('login', 'mallory');
    expect((await fetch(stranger, { redirect: 'manual' })).status).toBe(401);
  });

  it('expire after eight hours, and rotate on refresh: the old pair stops working', async () => {
    const first = await connect('alice');
    fake.oauth!.advance(28_801);
    expect(await status(api(first.access_token as string).rest.users.getAuthenticated())).toBe(401);
    const second = await exchange({
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token as string,
    });
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(await status(api(second.access_token as string).rest.users.getAuthenticated())).toBe(
      200,
    );
    // The used refresh token is spent: a second replica refreshing with it is refused.
    expect(
      await exchange({ grant_type: 'refresh_token', refresh_token: first.refresh_token as string }),
    ).toMatchObject({
      error: 'bad_refresh_token',
    });
    // Refreshing before expiry retires the access token it was issued with.
    const third = await exchange({
      grant_type: 'refresh_token',
      refresh_token: second.refresh_token as string,
    });
    expect(await status(api(second.access_token as string).rest.users.getAuthenticated())).toBe(
      401,
    );
    expect(await status(api(third.access_token as string).rest.users.getAuthenticated())).toBe(200);
    // Six months on, the refresh token has expired too.
    fake.oauth!.advance(15_811_201);
    expect(
      await exchange({ grant_type: 'refresh_token', refresh_token: third.refresh_token as string }),
    ).toMatchObject({
      error: 'bad_refresh_token',
    });
  });

  it('are revoked one by one or as a whole authorization, with the app as Basic credentials', async () => {
    const basic = `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;
    const revoke = (what: 'token' | 'grant', token: string, authorization = basic) =>
      fetch(`${fake.url}/applications/${CLIENT.id}/${what}`, {
        method: 'DELETE',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ access_token: token }),
      }).then((r) => r.status);
    const one = await connect('bob');
    const two = await connect('bob');
    expect(await revoke('token', one.access_token as string, 'Basic bm9wZTpub3Bl')).toBe(404);
    expect(await revoke('token', one.access_token as string)).toBe(204);
    expect(await status(api(one.access_token as string).rest.users.getAuthenticated())).toBe(401);
    expect(await status(api(two.access_token as string).rest.users.getAuthenticated())).toBe(200);
    expect(
      await exchange({ grant_type: 'refresh_token', refresh_token: one.refresh_token as string }),
    ).toMatchObject({
      error: 'bad_refresh_token',
    });
    expect(await revoke('grant', two.access_token as string)).toBe(204);
    expect(await status(api(two.access_token as string).rest.users.getAuthenticated())).toBe(401);
    expect(await revoke('token', two.access_token as string)).toBe(422);
  });

  it('answers form-encoded unless JSON is asked for', async () => {
    const answer = await exchange({ code: 'nope' }, false);
    expect(answer).toMatchObject({ error: 'bad_verification_code' });
  });
});
