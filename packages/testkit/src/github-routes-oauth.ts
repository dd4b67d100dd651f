import type { IncomingMessage } from 'node:http';
import { oauthPages } from './oauth-pages.js';
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

  oauthPages(http, oauth, {
    vendor: 'GitHub',
    signInPath: '/login',
    loginParam: 'login',
    backParam: 'return_to',
    cookie: 'fake_gh_session',
    authorizePath: '/login/oauth/authorize',
    wrongPassword: 'Incorrect username or password.',
    authorize: (login, query) => oauth.authorizeUser(login, query),
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
