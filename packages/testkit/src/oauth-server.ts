import { createHash, randomBytes } from 'node:crypto';

/**
 * The part every vendor's OAuth 2 authorization server shares in the fakes (RFC 6749 §4.1 and
 * §6, RFC 7636): who is signed in to the vendor's web pages, the authorization codes (one use,
 * bound to the redirect URI and the PKCE challenge), the token pairs they become, refresh-token
 * rotation, revocation, and a clock tests can move. What differs per vendor — token shapes,
 * lifetimes, which PKCE methods, how long a used refresh token still works, how answers and
 * errors are spelled — is the vendor profile's; each vendor's fake cites its pages there
 * (github-oauth.ts, slack-oauth.ts).
 */

/** An app as registered at the vendor, and who may sign in to the vendor's pages. */
export interface FakeOAuthApp {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The registered redirect URIs: `redirect_uri` must be one of them exactly. */
  readonly callbackUrls: readonly string[];
  /** Who can sign in to the fake's web pages. */
  readonly users: readonly string[];
  /** Access token lifetime, seconds (default: the vendor's). */
  readonly accessSeconds?: number;
  /** Refresh token lifetime, seconds (default: the vendor's). */
  readonly refreshSeconds?: number;
}

/** What differs per vendor. */
export interface OAuthProfile {
  readonly accessToken: () => string;
  readonly refreshToken: () => string;
  readonly accessSeconds: number;
  readonly refreshSeconds: number;
  /** `code_challenge_method`s accepted; a challenge without a method means `plain`. */
  readonly pkceMethods: readonly string[];
  /** How long a refresh token, once used, still works (Atlassian's reuse interval); else 0. */
  readonly reuseSeconds?: number;
  /**
   * A used refresh token presented after the reuse interval revokes every token of that
   * authorization, and the user must consent again (Atlassian's rotating refresh tokens).
   */
  readonly reuseRevokes?: boolean;
  /** How long a code lives, seconds. */
  readonly codeSeconds: number;
}

/** Why an exchange at the token endpoint failed, as a kind the vendor profile spells. */
export type ExchangeFailure = 'client' | 'grant_type' | 'code' | 'redirect' | 'refresh';

/** A token pair issued. */
export interface Issued {
  readonly login: string;
  readonly grant: 'authorization_code' | 'refresh_token';
  readonly access: string;
  readonly refresh: string;
  readonly accessSeconds: number;
  readonly refreshSeconds: number;
}

interface PendingCode {
  readonly login: string;
  readonly redirectUri: string | undefined;
  readonly challenge: { readonly value: string; readonly method: string } | undefined;
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

export class FakeOAuthServer {
  readonly #sessions = new Map<string, string>();
  readonly #codes = new Map<string, PendingCode>();
  readonly #byAccess = new Map<string, Authorization>();
  readonly #byRefresh = new Map<string, Authorization>();
  /** Refresh tokens already used, when, and what they became: refused after the reuse interval. */
  readonly #spent = new Map<string, { at: number; next: Issued }>();
  /** Refresh tokens of revoked authorizations: refused at once. */
  readonly #revoked = new Set<string>();
  #offsetMs = 0;
  /** Every token pair issued, in order (login and kind), for tests. */
  readonly issued: Array<{ login: string; grant: 'authorization_code' | 'refresh_token' }> = [];

  constructor(
    readonly options: FakeOAuthApp,
    private readonly profile: OAuthProfile,
  ) {}

  /** The fake's clock: real time plus what `advance` added. */
  now(): number {
    return Date.now() + this.#offsetMs;
  }

  /** Moves the fake's clock on (tokens and codes expire as if that time had passed). */
  advance(seconds: number): void {
    this.#offsetMs += seconds * 1000;
  }

  /** Signs a browser in as `login`: a new session id, or undefined for a stranger. */
  signIn(login: string): string | undefined {
    if (!this.options.users.includes(login)) return undefined;
    const session = randomBytes(16).toString('hex');
    this.#sessions.set(session, login);
    return session;
  }

  /** Who a session id is signed in as. */
  sessionLogin(session: string | undefined): string | undefined {
    return session === undefined ? undefined : this.#sessions.get(session);
  }

  /**
   * The authorize step for a signed-in user: a code for the redirect URI, or why not. The
   * vendor shows a consent page first; the fake's users have consented already.
   */
  authorize(
    login: string,
    query: URLSearchParams,
  ): { code: string; redirect: string } | { problem: 'client' | 'redirect' | 'pkce' } {
    if (query.get('client_id') !== this.options.clientId) return { problem: 'client' };
    const asked = query.get('redirect_uri') ?? undefined;
    const redirect = asked ?? this.options.callbackUrls[0]!;
    if (!this.options.callbackUrls.includes(redirect)) return { problem: 'redirect' };
    const value = query.get('code_challenge') ?? undefined;
    const method = query.get('code_challenge_method') ?? 'plain';
    if (value !== undefined && !this.profile.pkceMethods.includes(method)) {
      return { problem: 'pkce' };
    }
    const code = randomBytes(10).toString('hex');
    this.#codes.set(code, {
      login,
      redirectUri: asked,
      challenge: value === undefined ? undefined : { value, method },
      expiresAt: this.now() + this.profile.codeSeconds * 1000,
    });
    return { code, redirect };
  }

  /**
   * The token endpoint: a code (with the verifier and the same redirect URI) or a refresh token
   * exchanged for a new pair, the client's credentials given as `client_id`/`client_secret`.
   */
  exchange(params: URLSearchParams): Issued | { failure: ExchangeFailure } {
    if (
      params.get('client_id') !== this.options.clientId ||
      params.get('client_secret') !== this.options.clientSecret
    ) {
      return { failure: 'client' };
    }
    const grant = params.get('grant_type') ?? 'authorization_code';
    if (grant === 'refresh_token') return this.#refresh(params.get('refresh_token') ?? '');
    if (grant !== 'authorization_code') return { failure: 'grant_type' };
    const code = params.get('code') ?? '';
    const pending = this.#codes.get(code);
    this.#codes.delete(code); // one use, whatever happens next
    if (pending === undefined || pending.expiresAt <= this.now()) return { failure: 'code' };
    const redirect = params.get('redirect_uri') ?? undefined;
    if (pending.redirectUri !== undefined && redirect !== pending.redirectUri) {
      return { failure: 'redirect' };
    }
    if (pending.challenge !== undefined) {
      const verifier = params.get('code_verifier') ?? '';
      const computed =
        pending.challenge.method === 'S256'
          ? createHash('sha256').update(verifier).digest('base64url')
          : verifier;
      if (computed !== pending.challenge.value) return { failure: 'code' };
    }
    return this.#issue(pending.login, 'authorization_code');
  }

  /**
   * Using a refresh token retires it and the access token issued with it. Within the vendor's
   * reuse interval the same token answers the same new pair again; after it, it is refused.
   */
  #refresh(token: string): Issued | { failure: ExchangeFailure } {
    if (this.#revoked.has(token)) return { failure: 'refresh' };
    const spent = this.#spent.get(token);
    if (spent !== undefined) {
      const reuse = (this.profile.reuseSeconds ?? 0) * 1000;
      if (this.now() - spent.at < reuse) return spent.next;
      if (this.profile.reuseRevokes === true) this.revokeUser(spent.next.login);
      return { failure: 'refresh' };
    }
    const authorization = this.#byRefresh.get(token);
    if (authorization === undefined || authorization.refreshExpiresAt <= this.now()) {
      return { failure: 'refresh' };
    }
    this.#byAccess.delete(authorization.access);
    this.#byRefresh.delete(token);
    const next = this.#issue(authorization.login, 'refresh_token');
    this.#spent.set(token, { at: this.now(), next });
    return next;
  }

  #issue(login: string, grant: 'authorization_code' | 'refresh_token'): Issued {
    const accessSeconds = this.options.accessSeconds ?? this.profile.accessSeconds;
    const refreshSeconds = this.options.refreshSeconds ?? this.profile.refreshSeconds;
    const authorization: Authorization = {
      login,
      access: this.profile.accessToken(),
      accessExpiresAt: this.now() + accessSeconds * 1000,
      refresh: this.profile.refreshToken(),
      refreshExpiresAt: this.now() + refreshSeconds * 1000,
    };
    this.#byAccess.set(authorization.access, authorization);
    this.#byRefresh.set(authorization.refresh, authorization);
    this.issued.push({ login, grant });
    const { access, refresh } = authorization;
    return { login, grant, access, refresh, accessSeconds, refreshSeconds };
  }

  /** Who an access token is; undefined once expired or revoked. */
  holderOf(token: string): string | undefined {
    const authorization = this.#byAccess.get(token);
    if (authorization === undefined || authorization.accessExpiresAt <= this.now()) {
      return undefined;
    }
    return authorization.login;
  }

  /** Whether an access token was issued and has expired (not revoked: that one is unknown). */
  expired(token: string): boolean {
    const authorization = this.#byAccess.get(token);
    return authorization !== undefined && authorization.accessExpiresAt <= this.now();
  }

  /** Whether Basic credentials are the app's client id and secret. */
  isClient(authorization: string | undefined): boolean {
    const [scheme, value] = (authorization ?? '').split(' ');
    if (scheme?.toLowerCase() !== 'basic' || value === undefined) return false;
    return (
      Buffer.from(value, 'base64').toString('utf8') ===
      `${this.options.clientId}:${this.options.clientSecret}`
    );
  }

  /**
   * Revokes one access token, or the user's whole authorization of the app (every token the
   * user holds for it). False when the token is unknown.
   */
  revoke(token: string, whole: boolean): boolean {
    const authorization = this.#byAccess.get(token);
    if (authorization === undefined) return false;
    if (whole) this.revokeUser(authorization.login);
    else this.#drop(authorization);
    return true;
  }

  /** The user revokes the app in their settings: every token they hold for it stops working. */
  revokeUser(login: string): void {
    for (const a of [...this.#byAccess.values()].filter((x) => x.login === login)) this.#drop(a);
  }

  #drop(authorization: Authorization): void {
    this.#byAccess.delete(authorization.access);
    this.#byRefresh.delete(authorization.refresh);
    this.#revoked.add(authorization.refresh);
  }
}
