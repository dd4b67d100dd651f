import { randomBytes } from 'node:crypto';
import type { HttpFake } from './http-fake.js';
import { formOrJson, oauthPages } from './oauth-pages.js';
import { FakeOAuthServer } from './oauth-server.js';
import type { ExchangeFailure, FakeOAuthApp, Issued } from './oauth-server.js';

/**
 * A Slack app's user tokens in the fake: the shared authorization server (oauth-server.ts) with
 * Slack's shapes. Each rule cites the Slack page it models:
 *
 * - [v2]: "Installing with OAuth" (docs.slack.dev/authentication/installing-with-oauth): the
 *   person is sent to `/oauth/v2/authorize` with `user_scope`; the code is exchanged at
 *   `oauth.v2.access`, whose answer holds the user's token under `authed_user`.
 * - [access]: the `oauth.v2.access` method (docs.slack.dev/reference/methods/oauth.v2.access):
 *   client credentials as HTTP Basic or as parameters, `code_verifier` for PKCE, `grant_type`
 *   `refresh_token`; errors `invalid_client_id`, `bad_client_secret`, `invalid_code`,
 *   `bad_redirect_uri`, `invalid_grant_type`, as Slack's methods fail: `ok: false`, HTTP 200.
 * - [rotation]: "Using token rotation" (docs.slack.dev/authentication/using-token-rotation):
 *   with rotation on, access tokens (`xoxe.xoxp-…`) expire after 12 hours, and each refresh
 *   (`xoxe-1-…`) gives a new pair and revokes the refresh token used; its answer carries the
 *   token at the top level; a spent refresh token answers `invalid_refresh_token`.
 * - [revoke]: the `auth.revoke` method (docs.slack.dev/reference/methods/auth.revoke): the token
 *   of the call is revoked; `{ ok: true, revoked: true }`.
 */

/** Slack's error codes [access][rotation], by the kind of failure. */
const ERRORS: Record<ExchangeFailure, string> = {
  client: 'bad_client_secret',
  grant_type: 'invalid_grant_type',
  code: 'invalid_code',
  redirect: 'bad_redirect_uri',
  refresh: 'invalid_refresh_token',
};

/** The user scopes every user token of the fake carries (its answers and `auth.test` say so). */
export const SLACK_USER_SCOPES =
  'channels:history,channels:read,chat:write,groups:history,groups:read';

export class SlackOAuth extends FakeOAuthServer {
  constructor(
    options: FakeOAuthApp,
    private readonly team: { readonly id: string; readonly name: string },
    private readonly appId = 'A0GATEHOUSE',
  ) {
    super(options, {
      accessToken: () => `xoxe.xoxp-1-${randomBytes(24).toString('hex')}`, // [rotation]
      refreshToken: () => `xoxe-1-${randomBytes(30).toString('hex')}`, // [rotation]
      accessSeconds: 43_200, // [rotation]: twelve hours
      // Slack's refresh tokens do not expire by time; a long life stands for that.
      refreshSeconds: 10 * 365 * 86_400,
      pkceMethods: ['S256'],
      codeSeconds: 600,
    });
  }

  /** `oauth.v2.access`: Slack's answer to a code [v2] or a refresh [rotation]. */
  access(params: URLSearchParams, authorization: string | undefined): Record<string, unknown> {
    // Basic credentials stand for `client_id` and `client_secret` [access].
    const [scheme, value] = (authorization ?? '').split(' ');
    if (scheme?.toLowerCase() === 'basic' && value !== undefined) {
      const [id, ...secret] = Buffer.from(value, 'base64').toString('utf8').split(':');
      params.set('client_id', id ?? '');
      params.set('client_secret', secret.join(':'));
    }
    if (params.get('client_id') !== this.options.clientId) {
      return { ok: false, error: 'invalid_client_id' };
    }
    const outcome = this.exchange(params);
    if ('failure' in outcome) return { ok: false, error: ERRORS[outcome.failure] };
    const team = { id: this.team.id, name: this.team.name };
    const token = (issued: Issued) => ({
      access_token: issued.access,
      token_type: 'user',
      scope: SLACK_USER_SCOPES,
      refresh_token: issued.refresh,
      expires_in: issued.accessSeconds,
    });
    const common = { ok: true, app_id: this.appId, team, enterprise: null };
    return outcome.grant === 'authorization_code'
      ? {
          ...common,
          authed_user: { id: outcome.login, ...token(outcome) },
          is_enterprise_install: false,
        }
      : { ...common, ...token(outcome), user_id: outcome.login, is_enterprise_install: false };
  }
}

/**
 * The pages and methods of the flow [v2]: the sign-in page (`/signin?user=<id>` stands for the
 * form), `/oauth/v2/authorize`, `oauth.v2.access` (no token needed) under `/api`.
 */
export function slackOAuthRoutes<C>(http: HttpFake<C>, oauth: SlackOAuth): void {
  oauthPages(http, oauth, {
    vendor: 'Slack',
    signInPath: '/signin',
    loginParam: 'user',
    backParam: 'redir',
    cookie: 'fake_slack_session',
    authorizePath: '/oauth/v2/authorize',
    wrongPassword: 'Sorry, you entered an incorrect email address or password.',
    authorize: (login, query) => {
      const outcome = oauth.authorize(login, query);
      return 'problem' in outcome
        ? { problem: `Something's not right: ${outcome.problem}` }
        : outcome;
    },
  });
  http.anonymousRoute(
    'POST',
    '/oauth.v2.access',
    async ({ req, res, meta }) => {
      const params = await formOrJson(req);
      http.send(res, meta, 200, oauth.access(params, req.headers.authorization));
    },
    { underPrefix: true },
  );
}
