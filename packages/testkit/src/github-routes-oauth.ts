import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpFake } from './http-fake.js';
import type { Caller, GitHubWorld } from './github-world.js';

/**
 * The web application flow of a GitHub App's user access tokens (github-oauth.ts cites the
 * pages each rule models): GitHub's sign-in page, `/login/oauth/authorize`,
 * `/login/oauth/access_token`, and the REST endpoints that revoke a token or an authorization.
 * The web pages answer at the server's root, beside the API, as on GitHub Enterprise Server.
 */
export function oauthRoutes(world: GitHubWorld, http: HttpFake<Caller>): void {
  const oauth = world.oauth;
  if (oauth === undefined) return;

  const page = (res: ServerResponse, status: number, text: string): void => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>GitHub</title><p>${text}</p>`);
  };

  // Signing in, the fake's way: `?login=<user>` stands for the form a person fills in. Only a
  // path on this host is a place to return to (no open redirect from the fake either).
  http.anonymousRoute('GET', '/login', ({ res, url }) => {
    const login = url.searchParams.get('login');
    const back = url.searchParams.get('return_to') ?? '/';
    if (login === null) return page(res, 200, 'Sign in to GitHub');
    const session = oauth.signIn(login);
    if (session === undefined) return page(res, 401, 'Incorrect username or password.');
    res.writeHead(302, {
      location: back.startsWith('/') && !back.startsWith('//') ? back : '/',
      'set-cookie': `fake_gh_session=${session}; Path=/; HttpOnly; SameSite=Lax`,
    });
    res.end();
  });

  http.anonymousRoute('GET', '/login/oauth/authorize', ({ req, res, url }) => {
    const login = oauth.sessionUser(req.headers.cookie);
    if (login === undefined) {
      res.writeHead(302, {
        location: `/login?return_to=${encodeURIComponent(url.pathname + url.search)}`,
      });
      res.end();
      return;
    }
    const outcome = oauth.authorize(login, url.searchParams);
    if ('problem' in outcome) return page(res, 400, outcome.problem);
    const to = new URL(outcome.redirect);
    to.searchParams.set('code', outcome.code);
    const state = url.searchParams.get('state');
    if (state !== null) to.searchParams.set('state', state);
    res.writeHead(302, { location: to.href });
    res.end();
  });

  // Parameters in the query or the body, form-encoded or JSON; the answer in the format the
  // Accept header asks for, errors included and all with status 200, as GitHub answers.
  http.anonymousRoute('POST', '/login/oauth/access_token', async ({ req, res, url }) => {
    const params = new URLSearchParams(url.search);
    for (const [name, value] of await bodyParams(req)) params.set(name, value);
    const answer = oauth.token(params);
    const json = (req.headers.accept ?? '').includes('application/json');
    res.writeHead(200, {
      'content-type': json
        ? 'application/json; charset=utf-8'
        : 'application/x-www-form-urlencoded; charset=utf-8',
    });
    res.end(
      json
        ? JSON.stringify(answer)
        : new URLSearchParams(
            Object.entries(answer).map(([k, v]): [string, string] => [k, String(v)]),
          ).toString(),
    );
  });

  for (const [path, whole] of [
    ['/applications/{client_id}/token', false],
    ['/applications/{client_id}/grant', true],
  ] as const) {
    http.anonymousRoute(
      'DELETE',
      path,
      async ({ req, res, params, meta }) => {
        if (!oauth.isClient(req.headers.authorization) || params[0] !== oauth.options.clientId) {
          return http.error(res, meta, 404, 'Not Found');
        }
        const body = Object.fromEntries(await bodyParams(req));
        if (!oauth.revoke(body.access_token ?? '', whole)) {
          return http.error(res, meta, 422, 'Validation Failed');
        }
        res.writeHead(204);
        res.end();
      },
      { underPrefix: true },
    );
  }
}

/** A request body's parameters: form-encoded or JSON (empty when there is none). */
async function bodyParams(req: IncomingMessage): Promise<Array<[string, string]>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return [];
  if ((req.headers['content-type'] ?? '').includes('application/json')) {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return Object.entries(parsed).map(([k, v]) => [k, String(v)]);
  }
  return [...new URLSearchParams(text)];
}
