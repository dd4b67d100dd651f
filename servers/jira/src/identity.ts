/**
 * Jira Cloud's part of acting as each person (ADR 0026): an Atlassian OAuth 2.0 (3LO) app —
 * `auth.atlassian.com/authorize` with the `api.atlassian.com` audience and `offline_access`,
 * `/oauth/token` with rotating refresh tokens; `api.atlassian.com/me` for who the account is,
 * `accessible-resources` for the sites the consent reaches (this site's must be among them), and
 * the person's requests through `api.atlassian.com/ex/jira/{cloudId}` (Atlassian's "OAuth 2.0
 * (3LO) apps" and "Implementing the Refresh Token Flow" pages). Atlassian offers no endpoint to
 * revoke a 3LO token: disconnecting forgets the grant here, and the person removes the app at
 * id.atlassian.com (Connected apps) to end it there too.
 */
import type { Logger, StartupReport } from '@gatehouse/core';
import { AccountRefusedError, identityFromConfig } from '@gatehouse/core/identity';
import type { IdentityVendor, UpstreamIdentity } from '@gatehouse/core/identity';
import { timedFetch } from '@gatehouse/core/saas';
import type { JiraConfig } from './config.js';

/** The classic scopes the tools need, and `offline_access` for a refresh token. */
export const JIRA_USER_SCOPES = [
  'read:jira-work',
  'write:jira-work',
  'read:jira-user',
  'read:me',
  'offline_access',
] as const;

/** One site a consent reaches (`accessible-resources`). */
interface Resource {
  readonly id: string;
  readonly url: string;
}

/** The gateway's calls with a person's token, bounded in time. */
export function gateway(config: JiraConfig) {
  const base = config.JIRA_GATEWAY_URL.replace(/\/$/, '');
  const fetchBounded = timedFetch(config.JIRA_REQUEST_TIMEOUT_MS);
  const get = async <T>(path: string, token: string): Promise<T> => {
    const answer = await fetchBounded(`${base}${path}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    if (!answer.ok) throw new GatewayError(answer.status, path);
    return (await answer.json()) as T;
  };
  const site = new URL(config.JIRA_URL).origin;
  return {
    me: (token: string) =>
      get<{ account_id?: unknown; email?: unknown; name?: unknown }>('/me', token),
    /** The configured site's cloud id, if this token's consent reaches it. */
    cloudId: async (token: string): Promise<string | undefined> => {
      const sites = await get<Resource[]>('/oauth/token/accessible-resources', token);
      return sites.find((r) => new URL(r.url).origin === site)?.id;
    },
    /** Where a person's Jira requests go: the site through the gateway. */
    host: (cloudId: string) => `${base}/ex/jira/${encodeURIComponent(cloudId)}`,
  };
}

/** The gateway refused a call (401: the token; else its status). */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    path: string,
  ) {
    super(`Atlassian answered ${status} to ${path}`);
  }
}

/** The server's identity in user mode; undefined in service mode. */
export function jiraIdentity(
  config: JiraConfig,
  logger: Logger,
  server: string,
): UpstreamIdentity | undefined {
  if (config.GATEHOUSE_IDENTITY !== 'user') return undefined;
  const auth = config.JIRA_AUTH_URL.replace(/\/$/, '');
  const atlassian = gateway(config);
  const vendor: IdentityVendor = {
    name: 'Jira',
    upstream: new URL(config.JIRA_URL).host,
    oauth: {
      authorizationEndpoint: `${auth}/authorize`,
      tokenEndpoint: `${auth}/oauth/token`,
      clientId: config.JIRA_OAUTH_CLIENT_ID!,
      clientSecret: config.JIRA_OAUTH_CLIENT_SECRET!,
      authorizationParameters: {
        audience: 'api.atlassian.com',
        scope: JIRA_USER_SCOPES.join(' '),
        prompt: 'consent',
      },
    },
    whoami: async (token) => {
      // A consent for another site only is refused: its account could not act here.
      if ((await atlassian.cloudId(token)) === undefined) {
        throw new AccountRefusedError(
          `The Atlassian account was allowed for another site, not ${new URL(config.JIRA_URL).host}: link again and choose that site`,
        );
      }
      const me = await atlassian.me(token);
      if (typeof me.account_id !== 'string') {
        throw new Error('Atlassian answered /me without an account id');
      }
      const login =
        typeof me.email === 'string'
          ? me.email
          : typeof me.name === 'string'
            ? me.name
            : me.account_id;
      return { login, id: me.account_id };
    },
    // No revoke: Atlassian has no endpoint to revoke a 3LO token (see the top of this file).
  };
  return identityFromConfig(config, server, vendor, logger);
}

/** What the start-up check reports when there is no service account to check. */
export function personsOnly(config: JiraConfig): StartupReport {
  return {
    message: 'Jira acts as each person',
    details: {
      identity: `each person's own account (3LO app ${config.JIRA_OAUTH_CLIENT_ID ?? '?'}, site ${new URL(config.JIRA_URL).host})`,
    },
    warnings: [],
  };
}
