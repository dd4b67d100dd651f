/**
 * Who a call acts as in Jira (ADR 0026), and what holds Jira's answers for that account: its
 * client (the site through Atlassian's gateway, with the person's token) and its create journal
 * (kept on that account's own user record, so person A's creates never answer person B's repeat).
 * The Jira server keeps no other cache: create metadata and user lookups are asked per call, as
 * the account sees them. A person's call never borrows the service account's client.
 */
import type { Logger, UpstreamCredential } from '@gatehouse/core';
import { PersonToken, asPerson } from '@gatehouse/core/identity';
import type { UpstreamIdentity } from '@gatehouse/core/identity';
import { Jira } from './client.js';
import type { CallBounds, JiraOptions } from './client.js';
import type { JiraConfig } from './config.js';
import { GatewayError, gateway } from './identity.js';
import { CreateJournal } from './journal.js';

/** The account a call acts as: the deps every tool takes, with its own client and journal. */
export interface Acting {
  readonly jira: Jira;
  readonly journal: CreateJournal;
  /** `service`, or `user:<Atlassian account id>`. */
  readonly account: string;
}

/** Accounts kept at once; the least recently used goes. */
const MAX_ACCOUNTS = 1_000;

/** Who asks: a call's context. */
export interface Asking extends CallBounds {
  credential(): Promise<UpstreamCredential>;
}

interface Person {
  readonly token: PersonToken;
  /** The client, once the site's cloud id was found with this person's token. */
  ready: Promise<Acting> | undefined;
}

export class JiraAccounts {
  readonly #service: Acting | undefined;
  readonly #people = new Map<string, Person>();
  readonly #keepMs: number;
  readonly #gateway: ReturnType<typeof gateway>;

  constructor(
    private readonly config: JiraConfig,
    private readonly logger: Logger,
    private readonly options: JiraOptions,
    private readonly identity: UpstreamIdentity | undefined,
    /** The service account's client; absent in user mode with no read falling back to it. */
    service: Jira | undefined,
  ) {
    // A record is kept for the dedupe window plus the search lag.
    this.#keepMs = (config.JIRA_DEDUPE_WINDOW_MIN * 60 + config.JIRA_SEARCH_LAG_S) * 1000;
    this.#gateway = gateway(config);
    this.#service =
      service === undefined
        ? undefined
        : { jira: service, journal: new CreateJournal(service, this.#keepMs), account: 'service' };
  }

  /** The service account (the start-up check, and the reads the operator let fall back to it). */
  get service(): Acting | undefined {
    return this.#service;
  }

  /** `deps` as `asking`'s call uses them: their own client and journal. */
  async deps<D extends object>(
    deps: D,
    asking: Asking,
  ): Promise<D & { readonly jira: Jira; readonly journal: CreateJournal }> {
    const { jira, journal } = await this.for(asking);
    return { ...deps, jira, journal };
  }

  /** Who `asking`'s call acts as: the person's own account, or the service where it may. */
  async for(asking: Asking): Promise<Acting> {
    const credential = await asking.credential();
    if (credential.kind === 'service') {
      if (this.#service === undefined) throw new Error('no Jira service account is configured');
      return this.#service;
    }
    const { grant, owner } = credential;
    const key = `user:${grant.account.id} ${JSON.stringify(owner)}`;
    let person = this.#people.get(key);
    if (person === undefined) {
      person = {
        token: new PersonToken(this.identity!, owner, grant.accessToken),
        ready: undefined,
      };
      this.#people.set(key, person);
      for (const old of this.#people.keys()) {
        if (this.#people.size <= MAX_ACCOUNTS) break;
        this.#people.delete(old);
      }
    } else {
      this.#people.delete(key);
      this.#people.set(key, person);
    }
    person.token.set(grant.accessToken);
    const found = person;
    found.ready ??= this.#client(found, grant.account.id).catch((error: unknown) => {
      found.ready = undefined; // the next call looks again
      throw error;
    });
    return found.ready;
  }

  /**
   * Once per account and process: the configured site's cloud id, from the sites this person's
   * consent reaches — none, and the grant goes (it cannot act here) and they are asked again.
   */
  async #client(person: Person, id: string): Promise<Acting> {
    const { token } = person;
    // A token Atlassian no longer takes is renewed once, as for any request (`asPerson`).
    const cloudId = await asPerson(
      token,
      (error) => error instanceof GatewayError && error.status === 401,
      () => this.#gateway.cloudId(token.token()),
    );
    if (cloudId === undefined) {
      this.logger.warn(
        { account: id },
        'a linked Atlassian account no longer reaches this Jira site: its grant is deleted',
      );
      throw await token.refused();
    }
    const jira = new Jira(this.config, this.logger, this.options, {
      host: this.#gateway.host(cloudId),
      token,
    });
    return { jira, journal: new CreateJournal(jira, this.#keepMs), account: `user:${id}` };
  }
}
