/**
 * The identity a call acts with upstream (ADR 0026): the service credential, or the person's own
 * grant. In `user` mode nothing falls back — a person with no grant gets the link to connect,
 * and no upstream call at all — except for the read tools the operator named, which may use the
 * service credential instead.
 */
import { randomUUID } from 'node:crypto';
import type { Principal } from '../principal.js';
import type { Connect } from './connect.js';
import { ConnectRequiredError } from './grant.js';
import type { Grant, GrantOwner } from './grant.js';
import type { Vault } from './vault.js';

/** What a server acting per person needs (built by the server from its configuration). */
export interface UpstreamIdentity {
  /** The vendor, as people know it (`GitHub`). */
  readonly vendor: string;
  /** The upstream host grants are for (`github.com`, a GitHub Enterprise host). */
  readonly upstream: string;
  /** The server's name (`gatehouse-github`). */
  readonly server: string;
  readonly vault: Vault;
  readonly connect: Connect;
  /** Refreshes a grant at the vendor (`refreshGrant` with the vendor's OAuth client). */
  refresh(grant: Grant): Promise<Grant>;
  /** Revokes an access token at the vendor (a grant disconnected); absent where it offers none. */
  readonly revoke?: ((accessToken: string) => Promise<void>) | undefined;
  /** The issuer of principals from OAuth tokens (GATEHOUSE_OAUTH_ISSUER). */
  readonly oauthIssuer?: string | undefined;
  /** Read tools that may use the service credential when the person has no grant. */
  readonly readFallback?: ReadonlySet<string> | undefined;
}

/** The credential one call acts with upstream. */
export type UpstreamCredential =
  /** `fallback`: in user mode, a read the operator let use the service credential. */
  | { readonly kind: 'service'; readonly fallback?: true }
  | { readonly kind: 'user'; readonly grant: Grant; readonly owner: GrantOwner };

/**
 * Whose grant a principal's calls use: its issuer and subject, from authentication only. A
 * principal with neither (stdio's local user, an unauthenticated loopback caller) has none.
 */
export function ownerOf(identity: UpstreamIdentity, principal: Principal): GrantOwner | undefined {
  const issuer =
    principal.authMethod === 'api_key'
      ? 'api-key'
      : principal.authMethod === 'oauth'
        ? identity.oauthIssuer
        : undefined;
  if (issuer === undefined) return undefined;
  return {
    server: identity.server,
    issuer,
    subject: principal.id,
    upstream: identity.upstream,
  };
}

/**
 * The credential for a call by `principal` (of `tool`, if a tool): the service's when the server
 * has no per-person identity; else the person's grant, refreshed if it is about to expire. A
 * person with no grant gets the service's only for a read tool the operator named, otherwise
 * {@link ConnectRequiredError} carrying the link to connect; a caller who is not a person gets
 * that error with no link, whatever the tool (CVE-2026-77254's class).
 */
export async function credentialFor(
  identity: UpstreamIdentity | undefined,
  principal: Principal,
  tool?: { readonly name: string; readonly access: 'read' | 'write' },
): Promise<UpstreamCredential> {
  if (identity === undefined) return { kind: 'service' };
  const owner = ownerOf(identity, principal);
  // A caller who is not a person this server can tell apart gets nothing upstream — not even
  // the operator's read fallback, which is for people who have not linked an account yet.
  if (owner === undefined) {
    throw new ConnectRequiredError(
      identity.vendor,
      undefined,
      `This server acts on ${identity.vendor} as each person, and this caller is not a person it can tell apart (no API key or token). Nothing was sent to ${identity.vendor}.`,
    );
  }
  const grant = await identity.vault.fresh(owner, (g) => identity.refresh(g));
  if (grant !== undefined) return { kind: 'user', grant, owner };
  if (tool?.access === 'read' && identity.readFallback?.has(tool.name) === true) {
    return { kind: 'service', fallback: true };
  }
  throw askToConnect(identity, owner);
}

/** The answer that asks `owner` to link their account: a fresh link, with its elicitation id. */
function askToConnect(identity: UpstreamIdentity, owner: GrantOwner): ConnectRequiredError {
  const elicitationId = randomUUID();
  const url = identity.connect.link(owner, elicitationId);
  return new ConnectRequiredError(identity.vendor, { url, elicitationId });
}

/**
 * The vendor refused a person's access token `stale` (401): their grant renewed (see
 * {@link Vault.renew}), or — when it is gone or cannot be refreshed — the answer that asks them
 * to link again is thrown.
 */
export async function renewGrant(
  identity: UpstreamIdentity,
  owner: GrantOwner,
  stale: string,
): Promise<Grant> {
  const grant = await identity.vault.renew(owner, stale, (g) => identity.refresh(g));
  if (grant === undefined) throw await grantRefused(identity, owner);
  return grant;
}

/**
 * The vendor refused a person's access token even renewed (revoked there, the app uninstalled):
 * the grant is deleted, and the answer asks them to link again. Nothing else is tried.
 */
export async function grantRefused(
  identity: UpstreamIdentity,
  owner: GrantOwner,
): Promise<ConnectRequiredError> {
  await identity.vault.delete(owner);
  const again = askToConnect(identity, owner);
  return new ConnectRequiredError(
    identity.vendor,
    again.link,
    `${identity.vendor} no longer accepts the account you linked (it was revoked or expired there). Link it again: open ${again.link!.url} in your browser, sign in, then call again.`,
  );
}

/**
 * Disconnects `owner`'s account: its token revoked at the vendor, then the grant deleted — the
 * `disconnect` tool and the operator's command. The login that was linked, or undefined when
 * none was. A token the vendor no longer takes is renewed and the new one revoked; a revocation
 * it still refuses is reported (`revoked: false`), and the grant goes anyway.
 */
export async function disconnect(
  identity: UpstreamIdentity,
  owner: GrantOwner,
): Promise<{ readonly login: string; readonly revoked: boolean } | undefined> {
  const grant = await identity.vault.get(owner);
  if (grant === undefined) {
    await identity.vault.delete(owner); // a record that no longer opens goes too
    return undefined;
  }
  const { revoke: vendorRevoke } = identity;
  const revoke = (token: string) =>
    vendorRevoke === undefined
      ? Promise.resolve(false)
      : vendorRevoke(token).then(
          () => true,
          () => false,
        );
  let revoked = await revoke(grant.accessToken);
  if (!revoked && vendorRevoke !== undefined) {
    // An access token the vendor no longer takes (expired by its clock) revokes nothing, while
    // the refresh token still stands: renewed, the fresh token is revoked instead.
    const renewed = await identity.vault
      .renew(owner, grant.accessToken, (g) => identity.refresh(g))
      .catch(() => undefined);
    if (renewed !== undefined) revoked = await revoke(renewed.accessToken);
  }
  await identity.vault.delete(owner);
  return { login: grant.account.login, revoked };
}

/**
 * A person's current access token as their client sends it (ADR 0026): the grant's token, set
 * again on each call, replaced when renewed; refused even renewed, the grant goes and the answer
 * asks them to link again. One per person's client, in every SaaS server.
 */
export class PersonToken {
  #value: string;

  constructor(
    private readonly identity: UpstreamIdentity,
    private readonly owner: GrantOwner,
    accessToken: string,
  ) {
    this.#value = accessToken;
  }

  /** The token to send now. */
  token(): string {
    return this.#value;
  }

  /** The grant's token as the vault gave it to this call. */
  set(accessToken: string): void {
    this.#value = accessToken;
  }

  /** The vendor refused `stale`: renewed — refreshed here, or already by another call. */
  async renew(stale: string): Promise<void> {
    this.#value = (await renewGrant(this.identity, this.owner, stale)).accessToken;
  }

  /** The vendor refused even a renewed token: the answer that asks them to link again. */
  refused(): Promise<ConnectRequiredError> {
    return grantRefused(this.identity, this.owner);
  }
}

/**
 * One request as a person: a token the vendor refused (`refusedToken`: the vendor did nothing
 * with the request, so this holds for writes too) is renewed once and the request sent again;
 * refused again, the grant goes and the person is asked to link again.
 */
export async function asPerson<T>(
  person: Pick<PersonToken, 'token' | 'renew' | 'refused'>,
  refusedToken: (error: unknown) => boolean,
  send: () => Promise<T>,
): Promise<T> {
  const used = person.token();
  try {
    return await send();
  } catch (error) {
    if (!refusedToken(error)) throw error;
  }
  await person.renew(used);
  try {
    return await send();
  } catch (error) {
    if (refusedToken(error)) throw await person.refused();
    throw error;
  }
}
