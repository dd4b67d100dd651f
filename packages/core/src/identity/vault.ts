/**
 * The vault of delegated grants (ADR 0026): each person's upstream tokens, sealed with the
 * operator's keys (keyring.ts) and kept in a store (grant-store.ts). A grant is found by who is
 * asking — the server, the principal's issuer and subject, the upstream host — and by nothing
 * else; it opens only for that owner.
 */
import { createHash } from 'node:crypto';
import type { GrantStore } from './grant-store.js';
import { Keyring } from './keyring.js';
import { GrantRevokedError } from './grant.js';
import type { Grant, GrantOwner } from './grant.js';

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

  /**
   * The owner's grant, refreshed first when it expires within `marginMs` — one refresh at a time
   * per grant across replicas; whoever waited reads what the first one stored. Undefined when
   * there is no grant, or the vendor refused its refresh token (the grant is then deleted: the
   * person is asked to connect again). Any other failure of `refresh` is thrown, the grant kept.
   */
  async fresh(
    owner: GrantOwner,
    refresh: (grant: Grant) => Promise<Grant>,
    marginMs = 60_000,
  ): Promise<Grant | undefined> {
    const ripe = (grant: Grant) =>
      grant.expiresAt === undefined || grant.expiresAt - marginMs > Date.now();
    const first = await this.get(owner);
    if (first === undefined || ripe(first)) return first;
    return this.#refreshUnless(owner, ripe, refresh);
  }

  /**
   * The vendor refused `staleToken` (a clock that disagrees on expiry, a token rotated under a
   * call in flight): the owner's grant renewed — refreshed now, unless another call already
   * replaced that token, whose grant is then the answer. Undefined when there is no grant or the
   * vendor refused the refresh too (the grant is then deleted). Same lock as {@link fresh}.
   */
  async renew(
    owner: GrantOwner,
    staleToken: string,
    refresh: (grant: Grant) => Promise<Grant>,
  ): Promise<Grant | undefined> {
    return this.#refreshUnless(owner, (grant) => grant.accessToken !== staleToken, refresh);
  }

  /**
   * Under the grant's lock: the stored grant if `enough` says it will do, else refreshed and
   * stored; a grant the vendor refused to refresh is deleted (undefined).
   */
  #refreshUnless(
    owner: GrantOwner,
    enough: (grant: Grant) => boolean,
    refresh: (grant: Grant) => Promise<Grant>,
  ): Promise<Grant | undefined> {
    return this.store.exclusive(Vault.keyOf(owner), async () => {
      const grant = await this.get(owner);
      if (grant === undefined || enough(grant)) return grant;
      let renewed: Grant;
      try {
        renewed = await refresh(grant);
      } catch (error) {
        if (!(error instanceof GrantRevokedError)) throw error;
        await this.delete(owner);
        return undefined;
      }
      await this.put(owner, renewed);
      return renewed;
    });
  }

  /** Deletes the owner's grant; true when there was one. */
  async delete(owner: GrantOwner): Promise<boolean> {
    return this.store.delete(Vault.keyOf(owner));
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
