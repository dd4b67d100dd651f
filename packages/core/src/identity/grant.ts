/** A person's grant at an upstream, and whose it is (ADR 0026). */

/** Whose grant: the MCP principal (issuer and subject) on one server, for one upstream host. */
export interface GrantOwner {
  /** The server's name (`gatehouse-github`). */
  readonly server: string;
  /** Who vouched for the principal: the IdP's `iss`, or `api-key` for a configured key. */
  readonly issuer: string;
  /** The principal within the issuer: a JWT's `sub`, an API key's principal. */
  readonly subject: string;
  /** The upstream host the grant is for (`github.com`, a GitHub Enterprise host). */
  readonly upstream: string;
}

/** A person's grant at the upstream. */
export interface Grant {
  readonly accessToken: string;
  readonly refreshToken?: string | undefined;
  /** When the access token expires (ms since the epoch), if it does. */
  readonly expiresAt?: number | undefined;
  /** When the refresh token expires, if it does. */
  readonly refreshExpiresAt?: number | undefined;
  /** Who the upstream says the person is (`GET /user` on GitHub). */
  readonly account: { readonly login: string; readonly id: string };
  /** When the grant was obtained or last refreshed. */
  readonly obtainedAt: number;
}

/** The vendor refused a grant's refresh token (revoked, spent, expired): ask the person again. */
export class GrantRevokedError extends Error {
  override readonly name = 'GrantRevokedError';
}
