import { createHash, randomBytes } from 'node:crypto';

/**
 * A GitHub App's user access tokens in the fake: who is signed in to the fake's web pages, the
 * codes of the web application flow, and the tokens they become — with GitHub's lifetimes,
 * rotation and revocation. Each rule cites the GitHub page it models:
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
export interface GitHubOAuthOptions {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The app's callback URLs: `redirect_uri` must be one of them exactly [generate]. */
  readonly callbackUrls: readonly string[];
  /** Who can sign in to the fake's web pages (their rights: the repositories' collaborators). */
  readonly users: readonly string[];
  /** Access token lifetime (default 8 hours, [generate]). */
  readonly accessSeconds?: number;
  /** Refresh token lifetime (default 15 811 200 s, about six months, [refresh]). */
  readonly refreshSeconds?: number;
}

/** A code of the web application flow: ten minutes, one use [errors: bad_verification_code]. */
interface PendingCode {
  readonly login: string;
  readonly redirectUri: string | undefined;
  readonly challenge: string | undefined;
  readonly expiresAt: number;
}

/** One authorization of the app by one user, and its current token pair. */
interface Authorization {
  readonly login: string;
  access: string;
  accessExpiresAt: number;
  refresh: string;
  refreshExpiresAt: number;
}

/** What a user's token reaches and may write to, now (github-world.ts `userReach`). */
export interface UserReach {
  readonly repos: readonly string[];
  readonly writes: readonly string[];
}

/** A token endpoint answer: GitHub's JSON, errors included (which GitHub sends with 200). */
export type TokenAnswer = Record<string, string | number>;

const CODE_SECONDS = 600;

export class GitHubOAuth {
  readonly #sessions = new Map<string, string>();
  readonly #codes = new Map<string, PendingCode>();
  readonly #byAccess = new Map<string, Authorization>();
  readonly #byRefresh = new Map<string, Authorization>();
  /** Refresh tokens already used: a second use is refused [refresh]. */
  readonly #spent = new Set<string>();
  #offsetMs = 0;
  /** Every grant GitHub issued, in order (login and kind), for tests. */
  readonly issued: Array<{ login: string; grant: 'authorization_code' | 'refresh_token' }> = [];

  constructor(
    readonly options: GitHubOAuthOptions,
    private readonly reachOf: (login: string) => UserReach,
  ) {}

  /** The fake's clock: real time plus what `advance` added. */
  now(): number {
    return Date.now() + this.#offsetMs;
  }

  /** Moves the fake's clock on (tokens and codes expire as if that time had passed). */
  advance(seconds: number): void {
    this.#offsetMs += seconds * 1000;
  }

  /** Signs a browser in as `login`: the session cookie's value, or undefined for a stranger. */
  signIn(login: string): string | undefined {
    if (!this.options.users.includes(login)) return undefined;
    const session = randomBytes(16).toString('hex');
    this.#sessions.set(session, login);
    return session;
  }

  /** Who a session cookie is signed in as. */
  sessionUser(cookie: string | undefined): string | undefined {
    const session = /(?:^|;\s*)fake_gh_session=([0-9a-f]+)/.exec(cookie ?? '')?.[1];
    return session === undefined ? undefined : this.#sessions.get(session);
  }

  /**
   * The authorize step for a signed-in user: a code for `redirect_uri`, or why not. GitHub
   * shows the app's consent page first; the fake's users have consented already.
   */
  authorize(
    login: string,
    query: URLSearchParams,
  ): { code: string; redirect: string } | { problem: string } {
    if (query.get('client_id') !== this.options.clientId) {
      return { problem: 'The client_id is not that of a registered application.' };
    }
    const asked = query.get('redirect_uri') ?? undefined;
    const redirect = asked ?? this.options.callbackUrls[0]!;
    if (!this.options.callbackUrls.includes(redirect)) {
      return { problem: 'The redirect_uri is not associated with this application.' };
    }
    const challenge = query.get('code_challenge') ?? undefined;
    const method = query.get('code_challenge_method');
    if (challenge !== undefined && method !== 'S256') {
      return { problem: 'Only the S256 code challenge method is supported.' }; // [pkce]
    }
    const code = randomBytes(10).toString('hex');
    this.#codes.set(code, {
      login,
      redirectUri: asked,
      challenge,
      expiresAt: this.now() + CODE_SECONDS * 1000,
    });
    return { code, redirect };
  }

  /** `POST /login/oauth/access_token`: a code or a refresh token exchanged for a token pair. */
  token(params: URLSearchParams): TokenAnswer {
    if (
      params.get('client_id') !== this.options.clientId ||
      params.get('client_secret') !== this.options.clientSecret
    ) {
      return failure(
        'incorrect_client_credentials',
        'The client_id and/or client_secret passed are incorrect.',
      );
    }
    const grant = params.get('grant_type') ?? 'authorization_code';
    if (grant === 'refresh_token') return this.#refresh(params.get('refresh_token') ?? '');
    if (grant !== 'authorization_code') {
      return failure('unsupported_grant_type', 'The grant type is not supported.');
    }
    const code = params.get('code') ?? '';
    const pending = this.#codes.get(code);
    this.#codes.delete(code); // one use, whatever happens next
    if (pending === undefined || pending.expiresAt <= this.now()) {
      return failure('bad_verification_code', 'The code passed is incorrect or expired.');
    }
    const redirect = params.get('redirect_uri') ?? undefined;
    if (pending.redirectUri !== undefined && redirect !== pending.redirectUri) {
      return failure(
        'redirect_uri_mismatch',
        'The redirect_uri MUST match the registered callback URL for this application.',
      );
    }
    if (pending.challenge !== undefined) {
      const verifier = params.get('code_verifier') ?? '';
      const computed = createHash('sha256').update(verifier).digest('base64url');
      if (computed !== pending.challenge) {
        return failure('bad_verification_code', 'The code passed is incorrect or expired.');
      }
    }
    return this.#issue(pending.login, 'authorization_code');
  }

  /** Using a refresh token retires it and the access token issued with it [refresh]. */
  #refresh(token: string): TokenAnswer {
    const authorization = this.#byRefresh.get(token);
    if (
      authorization === undefined ||
      this.#spent.has(token) ||
      authorization.refreshExpiresAt <= this.now()
    ) {
      return failure('bad_refresh_token', 'The refresh token passed is incorrect or expired.');
    }
    this.#retire(authorization);
    return this.#issue(authorization.login, 'refresh_token');
  }

  #issue(login: string, grant: 'authorization_code' | 'refresh_token'): TokenAnswer {
    const accessSeconds = this.options.accessSeconds ?? 28_800;
    const refreshSeconds = this.options.refreshSeconds ?? 15_811_200;
    const authorization: Authorization = {
      login,
      access: `ghu_${randomBytes(18).toString('hex')}`,
      accessExpiresAt: this.now() + accessSeconds * 1000,
      refresh: `ghr_${randomBytes(38).toString('hex')}`,
      refreshExpiresAt: this.now() + refreshSeconds * 1000,
    };
    this.#byAccess.set(authorization.access, authorization);
    this.#byRefresh.set(authorization.refresh, authorization);
    this.issued.push({ login, grant });
    return {
      access_token: authorization.access,
      expires_in: accessSeconds,
      refresh_token: authorization.refresh,
      refresh_token_expires_in: refreshSeconds,
      scope: '',
      token_type: 'bearer',
    };
  }

  #retire(authorization: Authorization): void {
    this.#byAccess.delete(authorization.access);
    this.#spent.add(authorization.refresh);
  }

  /** Who an access token is, with what it reaches now; undefined once expired or revoked. */
  credentialOf(token: string): ({ readonly login: string } & UserReach) | undefined {
    const authorization = this.#byAccess.get(token);
    if (authorization === undefined || authorization.accessExpiresAt <= this.now()) {
      return undefined;
    }
    return { login: authorization.login, ...this.reachOf(authorization.login) };
  }

  /** Whether Basic credentials are the app's client id and secret [apps]. */
  isClient(authorization: string | undefined): boolean {
    const [scheme, value] = (authorization ?? '').split(' ');
    if (scheme?.toLowerCase() !== 'basic' || value === undefined) return false;
    return (
      Buffer.from(value, 'base64').toString('utf8') ===
      `${this.options.clientId}:${this.options.clientSecret}`
    );
  }

  /**
   * The user revokes the app's authorization in their settings ("Reviewing and revoking
   * authorization of GitHub Apps"): every token they hold for it stops working.
   */
  revokeUser(login: string): void {
    for (const a of [...this.#byAccess.values()].filter((x) => x.login === login)) {
      this.#retire(a);
      this.#byRefresh.delete(a.refresh);
    }
  }

  /**
   * Revokes one access token (`…/token`), or the user's whole authorization of the app
   * (`…/grant`: every token the user holds for it). False when the token is unknown.
   */
  revoke(token: string, whole: boolean): boolean {
    const authorization = this.#byAccess.get(token);
    if (authorization === undefined) return false;
    const affected = whole
      ? [...this.#byAccess.values()].filter((a) => a.login === authorization.login)
      : [authorization];
    for (const a of affected) {
      this.#retire(a);
      this.#byRefresh.delete(a.refresh);
    }
    return true;
  }
}

function failure(error: string, description: string): TokenAnswer {
  return {
    error,
    error_description: description,
    error_uri: `https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${error.replaceAll('_', '-')}`,
  };
}
