/**
 * Who a call acts as on GitHub (ADR 0026), and everything that holds GitHub's answers or state
 * for that account: its client, its pacing against secondary rate limits, its trusted-authors
 * answers. Nothing here is shared between two accounts — person A's lookups never answer person
 * B (the GHSA-pjp5-fpmr-3349 class) — and a person's call never borrows the service's client.
 */
import type { Logger, RequestContext } from '@gatehouse/core';
import { PersonToken } from '@gatehouse/core/identity';
import type { UpstreamIdentity } from '@gatehouse/core/identity';
import type { Pacer } from '@gatehouse/core/saas';
import { createGitHub, githubPacer } from './client.js';
import type { GitHub, GitHubPacing } from './client.js';
import type { GitHubConfig } from './config.js';
import { TrustCache } from './trust.js';

/** The account a call acts as, with its own client and caches. */
export interface Acting {
  readonly github: GitHub;
  /** `service`, or `user:<GitHub user id>`: what keys every answer kept for later. */
  readonly account: string;
  /** Set in trusted-authors mode: push-access answers as this account sees them. */
  readonly trust: TrustCache | undefined;
}

/** Accounts kept at once; the least recently used goes (its caches with it). */
const MAX_ACCOUNTS = 1_000;

export class GitHubAccounts {
  readonly #service: Acting | undefined;
  /** By account: its pacing and trust answers outlive one access token. */
  readonly #people = new Map<string, { pacer: Pacer; trust: TrustCache | undefined }>();
  /** By owner: their client, and the token it sends (a refreshed token replaces it). */
  readonly #clients = new Map<string, { token: PersonToken; github: GitHub }>();

  constructor(
    private readonly config: GitHubConfig,
    private readonly logger: Logger,
    private readonly version: string,
    private readonly pacing: GitHubPacing,
    private readonly identity: UpstreamIdentity | undefined,
    /** The service's client; absent in user mode with no read falling back to it. */
    service: GitHub | undefined,
  ) {
    this.#service =
      service === undefined
        ? undefined
        : { github: service, account: 'service', trust: this.#state().trust };
  }

  #state(): { pacer: Pacer; trust: TrustCache | undefined } {
    return {
      pacer: githubPacer(this.pacing),
      trust: this.config.GITHUB_TRUSTED_AUTHORS_ONLY ? new TrustCache(this.logger) : undefined,
    };
  }

  /** Who `ctx`'s call acts as: the person's own account, or the service where it may. */
  async for(ctx: RequestContext): Promise<Acting> {
    const credential = await ctx.credential();
    if (credential.kind === 'service') {
      // The core hands out the service credential only without an identity, or to a read the
      // operator named; both need the service's client, which the configuration then requires.
      if (this.#service === undefined) throw new Error('no service credential is configured');
      return this.#service;
    }
    const { grant, owner } = credential;
    const account = `user:${grant.account.id}`;
    const state = recent(this.#people, account, () => this.#state());
    const entry = recent(this.#clients, JSON.stringify(owner), () => {
      // A client that acts with the owner's current token; one GitHub refuses is renewed.
      const token = new PersonToken(this.identity!, owner, grant.accessToken);
      const github = createGitHub(this.config, this.logger, this.version, this.pacing, {
        pacer: state.pacer,
        token,
      });
      return { token, github };
    });
    entry.token.set(grant.accessToken);
    return { github: entry.github, account, trust: state.trust };
  }
}

/** `map`'s entry for `key`, made if missing, as the most recent; the oldest beyond the cap go. */
function recent<T>(map: Map<string, T>, key: string, make: () => T): T {
  const found = map.get(key);
  if (found !== undefined) {
    map.delete(key);
    map.set(key, found);
    return found;
  }
  const made = make();
  map.set(key, made);
  for (const old of map.keys()) {
    if (map.size <= MAX_ACCOUNTS) break;
    map.delete(old);
  }
  return made;
}
