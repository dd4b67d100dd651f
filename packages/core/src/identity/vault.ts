/**
 * The vault of delegated grants (ADR 0026): each person's upstream tokens, sealed with the
 * operator's keys (keyring.ts) and kept in a store (grant-store.ts). A grant is found by who is
 * asking — the server, the principal's issuer and subject, the upstream host — and by nothing
 * else; it opens only for that owner.
 */
import { createHash } from 'node:crypto';
import type { GrantStore } from './grant-store.js';
import { Keyring } from './keyring.js';

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
 * The owner as one string, each part length-prefixed so that no two owners spell the same
 * (`a:b` + `c` never equals `a` + `b:c`): the additional authenticated data a record is sealed
 * with, and (hashed) the key it is stored under.
 */
function ownerText(owner: GrantOwner): string {
  return [owner.server, owner.issuer, owner.subject, owner.upstream]
    .map((part) => `${part.length}:${part}`)
    .join('|');
}

function isGrant(value: unknown): value is Grant {
  const g = value as Grant | null;
  return (
    typeof g === 'object' &&
    g !== null &&
    typeof g.accessToken === 'string' &&
    typeof g.obtainedAt === 'number' &&
    typeof g.account?.login === 'string' &&
    typeof g.account.id === 'string'
  );
}

export class Vault {
  constructor(
    private readonly keyring: Keyring,
    private readonly store: GrantStore,
  ) {}

  /** Where an owner's grant is stored: a hash, so the store names no one. */
  static keyOf(owner: GrantOwner): string {
    return createHash('sha256').update(ownerText(owner)).digest('base64url');
  }

  /**
   * The owner's grant, or undefined when there is none that opens for this owner. A grant
   * sealed under an older key is sealed again under the current one.
   */
  async get(owner: GrantOwner): Promise<Grant | undefined> {
    const key = Vault.keyOf(owner);
    const record = await this.store.get(key);
    if (record === undefined) return undefined;
    const text = this.keyring.open(record, ownerText(owner));
    if (text === undefined) return undefined;
    let grant: unknown;
    try {
      grant = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (!isGrant(grant)) return undefined;
    if (Keyring.inspect(record)?.keyId !== this.keyring.current) await this.put(owner, grant);
    return grant;
  }

  async put(owner: GrantOwner, grant: Grant): Promise<void> {
    const text = ownerText(owner);
    await this.store.set(Vault.keyOf(owner), this.keyring.seal(JSON.stringify(grant), text));
  }

  /** Deletes the owner's grant; true when there was one. */
  async delete(owner: GrantOwner): Promise<boolean> {
    return this.store.delete(Vault.keyOf(owner));
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
