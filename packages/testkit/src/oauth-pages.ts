import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpFake } from './http-fake.js';
import type { FakeOAuthServer } from './oauth-server.js';

/** How one vendor's web pages of the flow are spelled (its paths, parameters and cookie). */
export interface OAuthPages {
  /** Shown as the page's title (`GitHub`). */
  readonly vendor: string;
  /** The sign-in page; `?<loginParam>=<user>` stands for the form a person fills in. */
  readonly signInPath: string;
  readonly loginParam: string;
  /** Where to return after signing in (a path on this host only: no open redirect). */
  readonly backParam: string;
  readonly cookie: string;
  readonly authorizePath: string;
  /** The refusal of an unknown user, as the vendor words it. */
  readonly wrongPassword: string;
  /** The authorize step with the vendor's problems worded as its pages word them. */
  authorize(
    login: string,
    query: URLSearchParams,
  ): { code: string; redirect: string } | { problem: string };
}

/** Who a request's session cookie is signed in as, at `server`. */
function sessionUser(
  server: FakeOAuthServer,
  cookie: string | undefined,
  name: string,
): string | undefined {
  const session = new RegExp(`(?:^|;\\s*)${name}=([0-9a-f]+)`).exec(cookie ?? '')?.[1];
  return server.sessionLogin(session);
}

/**
 * The vendor's sign-in page and authorize page: a person not signed in is sent to sign in and
 * back; a signed-in person's consent is taken as given, and the browser is sent to the redirect
 * URI with the code and the `state` — or shown the problem.
 */
export function oauthPages<C>(http: HttpFake<C>, server: FakeOAuthServer, pages: OAuthPages): void {
  const page = (res: ServerResponse, status: number, text: string): void => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>${pages.vendor}</title><p>${text}</p>`);
  };
  http.anonymousRoute('GET', pages.signInPath, ({ res, url }) => {
    const login = url.searchParams.get(pages.loginParam);
    const back = url.searchParams.get(pages.backParam) ?? '/';
    if (login === null) return page(res, 200, `Sign in to ${pages.vendor}`);
    const session = server.signIn(login);
    if (session === undefined) return page(res, 401, pages.wrongPassword);
    res.writeHead(302, {
      location: back.startsWith('/') && !back.startsWith('//') ? back : '/',
      'set-cookie': `${pages.cookie}=${session}; Path=/; HttpOnly; SameSite=Lax`,
    });
    res.end();
  });
  http.anonymousRoute('GET', pages.authorizePath, ({ req, res, url }) => {
    const login = sessionUser(server, req.headers.cookie, pages.cookie);
    if (login === undefined) {
      const back = encodeURIComponent(url.pathname + url.search);
      res.writeHead(302, { location: `${pages.signInPath}?${pages.backParam}=${back}` });
      res.end();
      return;
    }
    const outcome = pages.authorize(login, url.searchParams);
    if ('problem' in outcome) return page(res, 400, outcome.problem);
    const to = new URL(outcome.redirect);
    to.searchParams.set('code', outcome.code);
    const state = url.searchParams.get('state');
    if (state !== null) to.searchParams.set('state', state);
    res.writeHead(302, { location: to.href });
    res.end();
  });
}

/** A token request's parameters, form-encoded or JSON (vendors take both). */
export async function formOrJson(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!(req.headers['content-type'] ?? '').includes('application/json')) {
    return new URLSearchParams(text);
  }
  const parsed = (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>;
  return new URLSearchParams(
    Object.entries(parsed).map(([k, v]): [string, string] => [k, String(v)]),
  );
}
