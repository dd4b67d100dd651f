import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { HttpFake } from './http-fake.js';
import { formOrJson, oauthPages } from './oauth-pages.js';
import { FakeOAuthServer } from './oauth-server.js';
import type { ExchangeFailure, FakeOAuthApp } from './oauth-server.js';

/**
 * An Atlassian OAuth 2.0 (3LO) app's user tokens in the Jira fake: the shared authorization
 * server (oauth-server.ts) with Atlassian's shapes. Each rule cites the Atlassian page it models:
 *
 * - [3lo]: "OAuth 2.0 (3LO) apps" (developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps):
 *   the person is sent to `auth.atlassian.com/authorize` with `audience=api.atlassian.com`,
 *   `response_type=code`, `scope`, `redirect_uri`, `state` (and `prompt=consent`); the code is
 *   exchanged at `auth.atlassian.com/oauth/token` with the client id and secret in the body;
 *   `api.atlassian.com/oauth/token/accessible-resources` lists the sites the grant reaches (their
 *   cloud ids); requests go to `api.atlassian.com/ex/jira/{cloudId}/rest/api/3/…` — a 3LO token
 *   is not taken by the site's own address; `api.atlassian.com/me` names the account.
 * - [refresh]: "Implementing the Refresh Token Flow"
 *   (developer.atlassian.com/cloud/oauth/getting-started/refresh-tokens): `offline_access` gives
 *   a refresh token; each refresh gives a new pair and invalidates the one used (rotating refresh
 *   tokens); access tokens last an hour; an unknown or invalid refresh token answers 403
 *   `invalid_grant`.
 * - Not on those pages: the token request's encoding. Atlassian's examples send JSON; OAuth 2
 *   (RFC 6749 §4.1.3) sends a form, as `openid-client` does — and as oauth4webapi does in
 *   next-auth's Atlassian provider, which works against auth.atlassian.com — so the fake takes both.
 * - [rotation]: "Deprecating persistent refresh tokens" (Atlassian developer community, 2022):
 *   a used refresh token still works within a 10-minute leeway; used again after it, every
 *   refresh token of the authorization is invalidated and the person must consent again;
 *   refresh tokens expire after 90 days without use.
 */

/** Where the fake says a person's grant reaches: this site, or only another one. */
export interface AtlassianOAuthOptions extends FakeOAuthApp {
  /** Account ids whose consent was given for another site only (accessible-resources). */
  readonly elsewhere?: readonly string[];
}

/** Atlassian's token errors [3lo][refresh], by the kind of failure: status, code, text. */
const ERRORS: Record<ExchangeFailure, [number, string, string]> = {
  client: [401, 'access_denied', 'Unauthorized'],
  grant_type: [400, 'unsupported_grant_type', 'Unsupported grant type'],
  code: [403, 'invalid_grant', 'Invalid authorization code'],
  redirect: [403, 'invalid_grant', 'Invalid redirect_uri'],
  refresh: [403, 'invalid_grant', 'Unknown or invalid refresh token.'],
};

/** The scopes every token of the fake carries (classic Jira scopes, [3lo]). */
export const ATLASSIAN_SCOPES =
  'read:jira-work write:jira-work read:jira-user read:me offline_access';

export class AtlassianOAuth extends FakeOAuthServer {
  constructor(override readonly options: AtlassianOAuthOptions) {
    super(options, {
      accessToken: () => `atl3lo.${randomBytes(24).toString('base64url')}`,
      refreshToken: () => `atlrt.${randomBytes(30).toString('base64url')}`,
      accessSeconds: 3_600, // [refresh]: an hour
      refreshSeconds: 90 * 86_400, // [rotation]: 90 days without use
      reuseSeconds: 600, // [rotation]: the 10-minute leeway
      reuseRevokes: true, // [rotation]
      // Not on Atlassian's pages: PKCE. The core always sends an S256 challenge; the fake checks
      // it as RFC 7636 says, and a server that ignores it (Atlassian's, undocumented) loses nothing.
      pkceMethods: ['S256'],
      codeSeconds: 600,
    });
  }

  /** The account a 3LO token in `Authorization` is, if any. */
  bearerHolder(req: IncomingMessage): string | undefined {
    const token = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    return token === undefined ? undefined : this.holderOf(token);
  }
}

/**
 * Atlassian's pages and endpoints beside the site: `/login?user=<account id>` (the sign-in form),
 * `/authorize` [3lo], `/oauth/token` [3lo][refresh], `/oauth/token/accessible-resources` and
 * `/me` [3lo]. (On Atlassian they are three hosts: auth., api. and the site; the fake serves all
 * three on one.)
 */
export function atlassianOAuthRoutes<C>(
  http: HttpFake<C>,
  oauth: AtlassianOAuth,
  site: {
    readonly cloudId: string;
    url(): string;
    profile(accountId: string): Profile | undefined;
  },
): void {
  oauthPages(http, oauth, {
    vendor: 'Atlassian',
    signInPath: '/login',
    loginParam: 'user',
    backParam: 'continue',
    cookie: 'fake_atlassian_session',
    authorizePath: '/authorize',
    wrongPassword: 'Incorrect email address and / or password.',
    authorize: (login, query) => {
      // [3lo]: the audience and the response type are required.
      if (query.get('audience') !== 'api.atlassian.com') {
        return { problem: 'Invalid audience: expected api.atlassian.com' };
      }
      if (query.get('response_type') !== 'code') {
        return { problem: 'Unsupported response_type' };
      }
      const outcome = oauth.authorize(login, query);
      return 'problem' in outcome
        ? { problem: `Something went wrong (${outcome.problem})` }
        : outcome;
    },
  });
  http.anonymousRoute('POST', '/oauth/token', async ({ req, res, meta }) => {
    const params = await formOrJson(req);
    const outcome = oauth.exchange(params);
    if ('failure' in outcome) {
      const [status, error, description] = ERRORS[outcome.failure];
      return http.send(res, meta, status, { error, error_description: description });
    }
    http.send(res, meta, 200, {
      access_token: outcome.access,
      expires_in: outcome.accessSeconds,
      token_type: 'Bearer',
      scope: ATLASSIAN_SCOPES,
      refresh_token: outcome.refresh,
    });
  });
  http.anonymousRoute('GET', '/oauth/token/accessible-resources', ({ req, res, meta }) => {
    const holder = oauth.bearerHolder(req);
    if (holder === undefined)
      return http.send(res, meta, 401, { code: 401, message: 'Unauthorized' });
    const other = oauth.options.elsewhere?.includes(holder) === true;
    http.send(
      res,
      meta,
      200,
      [
        other
          ? {
              id: 'a7f3c2e1-0000-4000-8000-0000000000ff',
              url: 'https://elsewhere.atlassian.net',
              name: 'elsewhere',
            }
          : { id: site.cloudId, url: site.url(), name: 'acme' },
      ].map((r) => ({
        ...r,
        scopes: ATLASSIAN_SCOPES.split(' '),
        avatarUrl: `${r.url}/avatar.png`,
      })),
    );
  });
  http.anonymousRoute('GET', '/me', ({ req, res, meta }) => {
    const holder = oauth.bearerHolder(req);
    const me = holder === undefined ? undefined : site.profile(holder);
    if (me === undefined) return http.send(res, meta, 401, { code: 401, message: 'Unauthorized' });
    http.send(res, meta, 200, me);
  });
}

/** `/me`'s answer [3lo]. */
export interface Profile {
  readonly account_id: string;
  readonly email?: string;
  readonly name: string;
  readonly nickname: string;
  readonly picture: string;
  readonly account_status: 'active';
  readonly account_type: 'atlassian';
}
