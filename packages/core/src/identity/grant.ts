import { PolicyError } from '../errors.js';

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

/**
 * The vendor named the account, and it cannot act here (an Atlassian consent for another site, a
 * Slack account of another workspace): its message is shown on the linking page, so it names
 * only what the person chose.
 */
export class AccountRefusedError extends Error {
  override readonly name = 'AccountRefusedError';
}

/** The vendor refused a grant's refresh token (revoked, spent, expired): ask the person again. */
export class GrantRevokedError extends Error {
  override readonly name = 'GrantRevokedError';
}

/**
 * The person has no grant (or no grant can be theirs): the answer is the link to connect — a URL
 * elicitation where the client can show one, else a tool error naming the link and what it is
 * for. Recorded as a denial by the `upstream_identity` rule. Nothing was sent upstream.
 */
export class ConnectRequiredError extends PolicyError {
  override readonly name = 'ConnectRequiredError';
  constructor(
    readonly vendor: string,
    /** The link to connect, and the elicitation id it carries; absent when none can help. */
    readonly link: { readonly url: string; readonly elicitationId: string } | undefined,
    message?: string,
  ) {
    super(
      'upstream_identity',
      message ??
        `Connect your ${vendor} account first: open ${link?.url ?? ''} in your browser, sign in, then call again. Until then nothing is sent to ${vendor} for you.`,
      { code: 'connect_required' },
    );
  }
}
