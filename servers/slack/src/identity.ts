/**
 * Slack's part of acting as each person (ADR 0026): the app's user tokens — `/oauth/v2/authorize`
 * with `user_scope` and the workspace, `oauth.v2.access` whose answer holds the person's token
 * under `authed_user`, refreshed with token rotation on; `auth.test` for who the account is, and
 * `auth.revoke` to revoke one (Slack's "Installing with OAuth", "Using token rotation", and the
 * `oauth.v2.access`, `auth.test` and `auth.revoke` method pages).
 */
import type { Logger, StartupReport } from '@gatehouse/core';
import { AccountRefusedError, identityFromConfig } from '@gatehouse/core/identity';
import type { IdentityVendor, UpstreamIdentity } from '@gatehouse/core/identity';
import { timedFetch } from '@gatehouse/core/saas';
import type { SlackConfig } from './config.js';

/**
 * Slack's token answer as OAuth 2 spells it: the person's token under `authed_user` (a code) or
 * at the top level (a refresh), failures as `ok: false` with HTTP 200 — a spent refresh token
 * (`invalid_refresh_token`) is OAuth's `invalid_grant`, a grant that is gone.
 */
export function slackTokenAnswer(body: Record<string, unknown>): Record<string, unknown> {
  if (body.ok !== true) {
    const error = body.error === 'invalid_refresh_token' ? 'invalid_grant' : body.error;
    return { error: typeof error === 'string' ? error : 'server_error' };
  }
  const user = (body.authed_user ?? body) as Record<string, unknown>;
  return { ...user, token_type: 'bearer' };
}

/** The server's identity in user mode; undefined in service mode. */
export function slackIdentity(
  config: SlackConfig,
  logger: Logger,
  server: string,
  userScopes: readonly string[],
): UpstreamIdentity | undefined {
  if (config.GATEHOUSE_IDENTITY !== 'user') return undefined;
  const web = config.SLACK_WEB_URL.replace(/\/$/, '');
  const api = config.SLACK_API_URL.endsWith('/')
    ? config.SLACK_API_URL
    : `${config.SLACK_API_URL}/`;
  const fetchBounded = timedFetch(config.SLACK_REQUEST_TIMEOUT_MS);
  const team = config.SLACK_TEAM_ID!;
  /** A Slack method called with a person's token; its answer, or the error it failed with. */
  const method = async (name: string, token: string): Promise<Record<string, unknown>> => {
    const answer = await fetchBounded(`${api}${name}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'user-agent': 'gatehouse-slack' },
    });
    if (!answer.ok) throw new Error(`Slack answered ${answer.status} to ${name}`);
    return (await answer.json()) as Record<string, unknown>;
  };
  const vendor: IdentityVendor = {
    name: 'Slack',
    upstream: new URL(web).host,
    oauth: {
      authorizationEndpoint: `${web}/oauth/v2/authorize`,
      tokenEndpoint: `${api}oauth.v2.access`,
      clientId: config.SLACK_OAUTH_CLIENT_ID!,
      clientSecret: config.SLACK_OAUTH_CLIENT_SECRET!,
      tokenAnswer: slackTokenAnswer,
      // The person's scopes, never a bot's; `team` takes them to this workspace's sign-in.
      authorizationParameters: { user_scope: userScopes.join(','), team },
    },
    whoami: async (token) => {
      const me = await method('auth.test', token);
      if (me.ok !== true) throw new Error(`Slack refused auth.test (${String(me.error)})`);
      if (me.team_id !== team) {
        throw new AccountRefusedError(
          'The Slack account is of another workspace than this server’s: link again and sign in to that workspace',
        );
      }
      if (typeof me.user_id !== 'string' || typeof me.user !== 'string') {
        throw new Error('Slack answered auth.test without a user and user_id');
      }
      return { login: me.user, id: me.user_id };
    },
    revoke: async (token) => {
      const answer = await method('auth.revoke', token);
      // A token Slack no longer takes is revoked already; any other failure is reported.
      if (answer.ok !== true && !['invalid_auth', 'token_revoked'].includes(String(answer.error))) {
        throw new Error(`Slack refused auth.revoke (${String(answer.error)})`);
      }
    },
  };
  return identityFromConfig(config, server, vendor, logger);
}

/** What the start-up check reports when there is no bot token to check. */
export function personsOnly(config: SlackConfig): StartupReport {
  return {
    message: 'Slack acts as each person',
    details: {
      identity: `each person's own account (Slack app ${config.SLACK_OAUTH_CLIENT_ID ?? '?'}, workspace ${config.SLACK_TEAM_ID ?? '?'})`,
    },
    warnings: [],
  };
}
