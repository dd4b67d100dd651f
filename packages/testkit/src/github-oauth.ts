import { randomBytes } from 'node:crypto';
import { FakeOAuthServer } from './oauth-server.js';
import type { ExchangeFailure, FakeOAuthApp } from './oauth-server.js';

/**
 * A GitHub App's user access tokens in the fake: the shared authorization server
 * (oauth-server.ts) with GitHub's token shapes, lifetimes, PKCE method, answers and errors.
 * Each rule cites the GitHub page it models:
 *
 * - [generate]: "Generating a user access token for a GitHub App"
 *   (docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app)
 * - [refresh]: "Refreshing user access tokens"
 *   (docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens)
 * - [errors]: "Troubleshooting OAuth app access token request errors"
 *   (docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors)
 * - [pkce]: "PKCE support for OAuth and GitHub App authentication" (github.blog changelog,
 *   2025-07-14): S256 only; the verifier must match the challenge sent to authorize.
 * - [apps]: "REST API endpoints for OAuth authorizations" — `DELETE /applications/{client_id}/token`
 *   and `…/grant`, with the app's client id and secret as Basic credentials.
 */

/** The GitHub App's OAuth side, as registered. */
export interface GitHubOAuthOptions extends FakeOAuthApp {
  /** Access token lifetime (default 8 hours, [generate]). */
  readonly accessSeconds?: number;
  /** Refresh token lifetime (default 15 811 200 s, about six months, [refresh]). */
  readonly refreshSeconds?: number;
}

/** What a user's token reaches and may write to, now (github-world.ts `userReach`). */
export interface UserReach {
  readonly repos: readonly string[];
  readonly writes: readonly string[];
}

/** A token endpoint answer: GitHub's JSON, errors included (which GitHub sends with 200). */
export type TokenAnswer = Record<string, string | number>;

/** GitHub's error codes and texts [errors], by the kind of failure. */
const ERRORS: Record<ExchangeFailure, [string, string]> = {
  client: [
    'incorrect_client_credentials',
    'The client_id and/or client_secret passed are incorrect.',
  ],
  grant_type: ['unsupported_grant_type', 'The grant type is not supported.'],
  code: ['bad_verification_code', 'The code passed is incorrect or expired.'],
  redirect: [
    'redirect_uri_mismatch',
    'The redirect_uri MUST match the registered callback URL for this application.',
  ],
  // A refresh token works once [refresh].
  refresh: ['bad_refresh_token', 'The refresh token passed is incorrect or expired.'],
};

const PROBLEMS = {
  client: 'The client_id is not that of a registered application.',
  redirect: 'The redirect_uri is not associated with this application.',
  pkce: 'Only the S256 code challenge method is supported.', // [pkce]
} as const;

export class GitHubOAuth extends FakeOAuthServer {
  constructor(
    override readonly options: GitHubOAuthOptions,
    private readonly reachOf: (login: string) => UserReach,
  ) {
    super(options, {
      accessToken: () => `ghu_${randomBytes(18).toString('hex')}`,
      refreshToken: () => `ghr_${randomBytes(38).toString('hex')}`,
      accessSeconds: 28_800, // [generate]
      refreshSeconds: 15_811_200, // [refresh]
      pkceMethods: ['S256'], // [pkce]
      codeSeconds: 600, // [errors: bad_verification_code]
    });
  }

  /** The authorize step, GitHub's problems spelled as GitHub's pages say them. */
  authorizeUser(
    login: string,
    query: URLSearchParams,
  ): { code: string; redirect: string } | { problem: string } {
    const outcome = this.authorize(login, query);
    return 'problem' in outcome ? { problem: PROBLEMS[outcome.problem] } : outcome;
  }

  /** `POST /login/oauth/access_token`: a code or a refresh token exchanged for a token pair. */
  token(params: URLSearchParams): TokenAnswer {
    const outcome = this.exchange(params);
    if ('failure' in outcome) {
      const [error, description] = ERRORS[outcome.failure];
      return {
        error,
        error_description: description,
        error_uri: `https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${error.replaceAll('_', '-')}`,
      };
    }
    return {
      access_token: outcome.access,
      expires_in: outcome.accessSeconds,
      refresh_token: outcome.refresh,
      refresh_token_expires_in: outcome.refreshSeconds,
      scope: '',
      token_type: 'bearer',
    };
  }

  /** Who an access token is, with what it reaches now; undefined once expired or revoked. */
  credentialOf(token: string): ({ readonly login: string } & UserReach) | undefined {
    const login = this.holderOf(token);
    return login === undefined ? undefined : { login, ...this.reachOf(login) };
  }
}
