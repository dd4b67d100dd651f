/**
 * GitHub's part of acting as each person (ADR 0026): the GitHub App's user access tokens —
 * the web flow at `/login/oauth/authorize` and `/login/oauth/access_token` on github.com or a
 * GitHub Enterprise Server host, `GET /user` for who the account is, and
 * `DELETE /applications/{client_id}/token` to revoke one (GitHub's "Generating a user access
 * token for a GitHub App", "Refreshing user access tokens" and "REST API endpoints for OAuth
 * authorizations" pages).
 */
import type { Logger } from '@gatehouse/core';
import { identityFromConfig } from '@gatehouse/core/identity';
import type { IdentityVendor, UpstreamIdentity } from '@gatehouse/core/identity';
import { timedFetch } from '@gatehouse/core/saas';
import type { GitHubConfig } from './config.js';
import type { AccessReport } from './inspect.js';

/** Whether a service credential is configured (a token, or a GitHub App installation). */
export function hasServiceCredential(config: GitHubConfig): boolean {
  return config.GITHUB_TOKEN !== undefined || config.GITHUB_APP_ID !== undefined;
}

/**
 * Where people authorize the app: GITHUB_WEB_URL, else github.com for api.github.com, else the
 * GitHub Enterprise host of GITHUB_API_URL (`https://HOST/api/v3` → `https://HOST`).
 */
export function githubWebUrl(config: GitHubConfig): string {
  if (config.GITHUB_WEB_URL !== undefined) return config.GITHUB_WEB_URL.replace(/\/$/, '');
  const api = new URL(config.GITHUB_API_URL);
  if (api.hostname === 'api.github.com') return 'https://github.com';
  return `${api.origin}${api.pathname.replace(/\/?api\/v3\/?$/, '').replace(/\/$/, '')}`;
}

/** The server's identity in user mode; undefined in service mode. */
export function githubIdentity(
  config: GitHubConfig,
  logger: Logger,
  service: { readonly name: string; readonly version: string },
): UpstreamIdentity | undefined {
  if (config.GATEHOUSE_IDENTITY !== 'user') return undefined;
  const web = githubWebUrl(config);
  const api = config.GITHUB_API_URL.replace(/\/$/, '');
  const fetchBounded = timedFetch(config.GITHUB_REQUEST_TIMEOUT_MS);
  const headers = {
    accept: 'application/vnd.github+json',
    'user-agent': `${service.name}/${service.version}`,
    'x-github-api-version': '2022-11-28',
  };
  const clientId = config.GITHUB_OAUTH_CLIENT_ID!;
  const clientSecret = config.GITHUB_OAUTH_CLIENT_SECRET!;
  const vendor: IdentityVendor = {
    name: 'GitHub',
    upstream: new URL(web).host,
    oauth: {
      authorizationEndpoint: `${web}/login/oauth/authorize`,
      tokenEndpoint: `${web}/login/oauth/access_token`,
      clientId,
      clientSecret,
    },
    whoami: async (token) => {
      const answer = await fetchBounded(`${api}/user`, {
        headers: { ...headers, authorization: `Bearer ${token}` },
      });
      if (!answer.ok) throw new Error(`GitHub answered ${answer.status} to GET /user`);
      const me = (await answer.json()) as { login?: unknown; id?: unknown };
      if (typeof me.login !== 'string' || typeof me.id !== 'number') {
        throw new Error('GitHub answered GET /user without a login and id');
      }
      return { login: me.login, id: String(me.id) };
    },
    revoke: async (token) => {
      const basic = Buffer.from(`${clientId}:${clientSecret}`).toString('base64');
      const answer = await fetchBounded(
        `${api}/applications/${encodeURIComponent(clientId)}/token`,
        {
          method: 'DELETE',
          headers: {
            ...headers,
            authorization: `Basic ${basic}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ access_token: token }),
        },
      );
      // 404: already gone. Anything else is a failure the caller reports.
      if (!answer.ok && answer.status !== 404) {
        throw new Error(`GitHub answered ${answer.status} to revoking a token`);
      }
    },
  };
  return identityFromConfig(config, service.name, vendor, logger);
}

/** What the start-up check reports when there is no service credential to check. */
export function personsOnly(config: GitHubConfig): AccessReport {
  return {
    identity: `each person's own account (GitHub App ${config.GITHUB_OAUTH_CLIENT_ID ?? '?'})`,
    scopes: undefined,
    repos: [],
    warnings: [],
  };
}
