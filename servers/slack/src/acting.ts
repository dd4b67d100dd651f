/**
 * Who a call acts as in Slack (ADR 0026), and everything that holds Slack's answers for that
 * account: its client, its channel directory (which channels it sees, its membership, where it
 * may post), its display names, its recent posts. Nothing here is shared between two accounts —
 * person A's directory never answers person B (the GHSA-pjp5-fpmr-3349 class) — and a person's
 * call never borrows the bot's. Only the history pacing is one per process: Slack limits history
 * reads "per API method per workspace per app" (its "Rate limits" page), whoever's token it is.
 */
import { ConnectRequiredError, PersonToken } from '@gatehouse/core/identity';
import type { UpstreamIdentity } from '@gatehouse/core/identity';
import type { Logger, UpstreamCredential } from '@gatehouse/core';
import type { Pacer } from '@gatehouse/core/saas';
import { ChannelDirectory } from './channels.js';
import type { ChannelInfo } from './channels.js';
import { Slack, historyPacer } from './client.js';
import type { CallBounds, SlackPacing } from './client.js';
import type { SlackConfig } from './config.js';
import { People } from './people.js';

/** The account a call acts as, with its own client and caches. */
export interface Acting {
  readonly slack: Slack;
  readonly channels: ChannelDirectory;
  readonly people: People;
  /** `service`, or `user:<Slack user id>`: what keys every answer kept for later. */
  readonly account: string;
  /** The workspace's URL (auth.test), for permalinks. */
  readonly workspace: { url?: string };
  /** This account's posts in the dedupe window, by content key: found without a request. */
  readonly posts: Map<string, { ts: string; at: number }>;
}

/** Accounts kept at once; the least recently used goes (its caches with it). */
const MAX_ACCOUNTS = 1_000;

/** A person's account: its token follows their grant; it is checked once (see `#check`). */
type Person = Acting & { token: PersonToken; checked?: Promise<void> | undefined };

/** Who asks: a call's context, or a completion's. */
export interface Asking extends CallBounds {
  credential(): Promise<UpstreamCredential>;
}

export class SlackAccounts {
  readonly #history: Pacer;
  readonly #service: Acting | undefined;
  /** By account: the person's client, directory and caches; the token follows their grant. */
  readonly #people = new Map<string, Person>();

  constructor(
    private readonly config: SlackConfig,
    private readonly logger: Logger,
    private readonly pacing: SlackPacing | undefined,
    private readonly identity: UpstreamIdentity | undefined,
  ) {
    this.#history = historyPacer(config);
    this.#service =
      config.SLACK_BOT_TOKEN === undefined
        ? undefined
        : this.#acting('service', new Slack(config, logger, this.#options()));
  }

  #options(): { history: Pacer; pacing?: SlackPacing } {
    return {
      history: this.#history,
      ...(this.pacing === undefined ? {} : { pacing: this.pacing }),
    };
  }

  #acting(account: string, slack: Slack): Acting {
    return {
      slack,
      channels: new ChannelDirectory(slack, this.config, this.logger),
      people: new People(slack),
      account,
      workspace: {},
      posts: new Map(),
    };
  }

  /** The bot's account (the start-up check, and the reads the operator let fall back to it). */
  get service(): Acting | undefined {
    return this.#service;
  }

  /** Whether any write tool is on: no directory lets anything be posted otherwise. */
  set writes(on: boolean) {
    this.#writes = on;
    if (this.#service !== undefined) this.#service.channels.writes = on;
  }
  #writes = false;

  /** Who `asking`'s call acts as: the person's own account, or the bot where it may. */
  async for(asking: Asking): Promise<Acting> {
    const credential = await asking.credential();
    if (credential.kind === 'service') {
      // The core hands out the service credential only without an identity, or to a read the
      // operator named; both need the bot's token, which the configuration then requires.
      if (this.#service === undefined) throw new Error('no bot token is configured');
      return this.#service;
    }
    const { grant, owner } = credential;
    // The account and the person who linked it: the same Slack account linked by two people
    // (an operator's mistake) still gets two directories, each following its own grant.
    const key = `user:${grant.account.id} ${JSON.stringify(owner)}`;
    let acting = this.#people.get(key);
    if (acting === undefined) {
      // A client acting with the owner's current token; one Slack refuses is renewed.
      const token = new PersonToken(this.identity!, owner, grant.accessToken);
      const slack = new Slack(this.config, this.logger, { ...this.#options(), person: token });
      acting = { ...this.#acting(`user:${grant.account.id}`, slack), token };
      this.#people.set(key, acting);
      for (const old of this.#people.keys()) {
        if (this.#people.size <= MAX_ACCOUNTS) break;
        this.#people.delete(old);
      }
    } else {
      this.#people.delete(key);
      this.#people.set(key, acting);
    }
    acting.token.set(grant.accessToken);
    acting.channels.writes = this.#writes;
    const person = acting;
    person.checked ??= this.#check(person, asking, grant.account.id).catch((error) => {
      person.checked = undefined; // the next call checks again
      throw error;
    });
    await person.checked;
    return acting;
  }

  /**
   * Once per account and process, before its first call: Slack says whose the token is
   * (`auth.test`), and it must be the linked account in the configured workspace — else the
   * grant goes and the person is asked to link again. The answer gives the workspace's URL.
   */
  async #check(person: Person, bounds: CallBounds, id: string): Promise<void> {
    const me = await person.slack.call(bounds, 'read', (c) => c.auth.test());
    if (me.user_id !== id || me.team_id !== this.config.SLACK_TEAM_ID) {
      this.logger.warn(
        { account: id },
        'a linked Slack token answered for another account or workspace: its grant is deleted',
      );
      throw await person.token.refused();
    }
    if (me.url !== undefined) person.workspace.url = me.url;
  }

  /**
   * The account for a completion or a listing: the caller's own, or none — a person with no
   * grant is offered nothing there (no place for the link; a read of it asks), and never the
   * bot's view.
   */
  async ifLinked(asking: Asking): Promise<Acting | undefined> {
    try {
      return await this.for(asking);
    } catch (error) {
      if (error instanceof ConnectRequiredError) return undefined;
      throw error;
    }
  }

  /**
   * The caller's account and the channel `arg` names in their own directory, to read or to post
   * to — or the directory's refusal (no request is sent for it). The channel is reported to the
   * core (`actsOn`): the allow-list holds for it and the record names its id.
   */
  async channel(
    ctx: Asking & { actsOn(target: string): void },
    arg: string,
    use: 'read' | 'post',
  ): Promise<{ acting: Acting; channel: ChannelInfo }> {
    const acting = await this.for(ctx);
    await acting.channels.fresh(ctx);
    const id = acting.channels.idOf(arg);
    if (id !== undefined) ctx.actsOn(`slack:${id}`);
    const channel = use === 'post' ? acting.channels.forPost(arg) : acting.channels.forRead(arg);
    return { acting, channel };
  }

  /**
   * A channel argument as policy and audit see it before the call: the bot's directory resolves
   * a #name; acting as each person, only an id is known before the call (a name is theirs to
   * resolve, and the handler reports it with `ctx.actsOn`).
   */
  target(arg: string): string | undefined {
    if (this.identity === undefined) return this.#service?.channels.target(arg);
    const trimmed = arg.trim();
    return trimmed.startsWith('#') ? undefined : `slack:${trimmed}`;
  }
}
