/**
 * The vendor's OAuth 2 authorization server, as `openid-client` speaks to it (ADR 0026): no
 * OAuth client is written by hand. Plain OAuth 2 (GitHub's, Slack's, Atlassian's), so the
 * endpoints are given rather than discovered.
 */
import * as client from 'openid-client';
import { GrantRevokedError } from './grant.js';
import type { Grant } from './grant.js';

export interface UpstreamOAuthOptions {
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /**
   * The vendor's token answer as OAuth 2 spells it (RFC 6749 §5.1 and §5.2), for a vendor whose
   * answer differs — Slack's user token under `authed_user`, its errors as `ok: false` with HTTP
   * 200. An answer mapped to one with an `error` member is an error answer.
   */
  readonly tokenAnswer?: (body: Record<string, unknown>) => Record<string, unknown>;
  /**
   * What the vendor's authorization URL carries besides OAuth 2's own parameters — Slack's
   * `user_scope` and `team`, Atlassian's `audience`, `scope` and `prompt`.
   */
  readonly authorizationParameters?: Readonly<Record<string, string>>;
}

/** Error codes of a refresh that mean "this grant is gone" (RFC 6749 §5.2; GitHub's). */
const GONE = new Set(['invalid_grant', 'bad_refresh_token']);

function isLoopback(url: URL): boolean {
  return ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
}

/**
 * The client configuration for a vendor. Plain http only to a loopback address (a test's fake);
 * anywhere else `openid-client` refuses it.
 */
export function upstreamOAuth(options: UpstreamOAuthOptions): client.Configuration {
  const token = new URL(options.tokenEndpoint);
  const config = new client.Configuration(
    {
      issuer: token.origin,
      authorization_endpoint: options.authorizationEndpoint,
      token_endpoint: options.tokenEndpoint,
    },
    options.clientId,
    options.clientSecret,
  );
  if (token.protocol === 'http:' && isLoopback(token)) client.allowInsecureRequests(config);
  const { tokenAnswer } = options;
  if (tokenAnswer !== undefined) {
    config[client.customFetch] = async (url, init) => {
      const answer = await fetch(url, init as RequestInit);
      if (url !== options.tokenEndpoint) return answer;
      const mapped = tokenAnswer((await answer.json()) as Record<string, unknown>);
      return new Response(JSON.stringify(mapped), {
        status: typeof mapped.error === 'string' ? 400 : 200,
        headers: { 'content-type': 'application/json' },
      });
    };
  }
  return config;
}

/**
 * The OAuth error code a failed token request carries, wherever `openid-client` put it: on the
 * error (an error status), or in the body of the answer it could not use, some causes down (a
 * 200 with an `error` member, as GitHub answers).
 */
function errorCode(error: unknown): string | undefined {
  let at: unknown = error;
  for (let depth = 0; depth < 4 && typeof at === 'object' && at !== null; depth++) {
    const e = at as { error?: unknown; body?: { error?: unknown }; cause?: unknown };
    if (typeof e.error === 'string') return e.error;
    if (typeof e.body?.error === 'string') return e.body.error;
    at = e.cause;
  }
  return undefined;
}

/**
 * A token endpoint's answer as a grant for `account`. Lifetimes are read from `expires_in` and
 * GitHub's `refresh_token_expires_in` when given.
 */
export function grantOf(
  tokens: client.TokenEndpointResponse,
  account: Grant['account'],
  now = Date.now(),
): Grant {
  const seconds = (value: unknown) =>
    typeof value === 'number' && Number.isFinite(value) ? now + value * 1000 : undefined;
  return {
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    expiresAt: seconds(tokens.expires_in),
    refreshExpiresAt: seconds(
      (tokens as { refresh_token_expires_in?: unknown }).refresh_token_expires_in,
    ),
    account,
    obtainedAt: now,
  };
}

/**
 * Refreshes a grant: a new token pair for the same account. Throws {@link GrantRevokedError}
 * when the vendor refuses the refresh token — GitHub answers that with status 200 and an
 * `error` member, which `openid-client` reports as an answer without an access token — and
 * rethrows any other failure (the vendor unreachable: the grant is kept, the call fails).
 */
export async function refreshGrant(config: client.Configuration, grant: Grant): Promise<Grant> {
  if (grant.refreshToken === undefined)
    throw new GrantRevokedError('the grant has no refresh token');
  try {
    const tokens = await client.refreshTokenGrant(config, grant.refreshToken);
    return grantOf(tokens, grant.account);
  } catch (error) {
    const code = errorCode(error);
    if (code !== undefined && GONE.has(code)) {
      throw new GrantRevokedError(`the vendor refused the refresh token (${code})`);
    }
    throw error;
  }
}
