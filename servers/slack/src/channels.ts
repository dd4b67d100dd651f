import { ConfigError, PolicyError } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import { TargetScope } from '@gatehouse/core/saas';
import type { CallBounds, Slack } from './client.js';
import type { SlackConfig } from './config.js';

/** What the server knows of a channel (from conversations.list). */
/** Pages of conversations.list a load reads at most (200 channels each). */
const MAX_PAGES = 50;
/** After a failed refresh, the next try. */
const RETRY_MS = 60_000;

export interface ChannelInfo {
  readonly id: string;
  readonly name: string;
  readonly is_private: boolean;
  readonly is_im: boolean;
  readonly is_mpim: boolean;
  readonly is_archived: boolean;
  /** Slack Connect: shared with another organisation, or pending. */
  readonly is_external: boolean;
  readonly is_member: boolean;
  readonly num_members: number | undefined;
  readonly topic: string;
  readonly purpose: string;
}

interface SlackChannel {
  id?: string;
  name?: string;
  user?: string;
  is_private?: boolean;
  is_im?: boolean;
  is_mpim?: boolean;
  is_archived?: boolean;
  is_ext_shared?: boolean;
  is_pending_ext_shared?: boolean;
  is_member?: boolean;
  num_members?: number;
  topic?: { value?: string };
  purpose?: { value?: string };
}

/**
 * A channel name as Slack documents them (conversations.create and conversations.rename: "can
 * only contain lowercase letters, numbers, hyphens, and underscores, and must be 80 characters or
 * less"; letters of other scripts are lowercase-less and allowed too). Names are shown outside
 * the untrusted-data frames — in headers, prompts, resource names — so only a name of that closed
 * set is shown; any other is not Slack's and the channel is shown by its id.
 */
const CHANNEL_NAME = /^[\p{Ll}\p{Lo}\p{Nd}_-]{1,80}$/u;

/** A name to show for a channel: its own when Slack's format allows it, else its id. */
function shownName(c: SlackChannel): string {
  const id = c.id ?? '';
  const name = c.name ?? c.user ?? id;
  return CHANNEL_NAME.test(name) || name === id ? name : id;
}

function info(c: SlackChannel): ChannelInfo {
  return {
    id: c.id ?? '',
    name: shownName(c),
    is_private: c.is_private === true,
    is_im: c.is_im === true,
    is_mpim: c.is_mpim === true,
    is_archived: c.is_archived === true,
    is_external: c.is_ext_shared === true || c.is_pending_ext_shared === true,
    is_member: c.is_member === true || c.is_im === true,
    num_members: c.num_members,
    topic: c.topic?.value ?? '',
    purpose: c.purpose?.value ?? '',
  };
}

const DIRECT = (c: ChannelInfo) => c.is_im || c.is_mpim;

/**
 * The channels this server may read and post to: the configured ids and #names, resolved to ids
 * from Slack's own list (never from the model), narrowed by GATEHOUSE_ALLOW_TARGETS (`slack:C…`),
 * without direct messages unless allowed. A channel outside it is refused from this directory,
 * before any request is sent. Names are resolved again every SLACK_CHANNEL_REFRESH_MIN.
 *
 * One directory per account (ADR 0026): the bot's, or — acting as a person — theirs, listed
 * with their own token, so it holds only the channels Slack shows them, with their membership;
 * for a person, an allow-list of which they see nothing is an empty directory, not an error.
 */
export class ChannelDirectory {
  #readable = new Map<string, ChannelInfo>();
  #postable = new Set<string>();
  #retryAt = 0;
  #unreadablePosts: string[] = [];
  #byName = new Map<string, string>();
  #loadedAt = 0;
  #loading: Promise<void> | undefined;
  /** Configured entries that name no channel the bot can see. */
  unresolved: string[] = [];

  constructor(
    private readonly slack: Slack,
    private readonly config: SlackConfig,
    private readonly logger: Logger,
  ) {}

  get loaded(): boolean {
    return this.#loadedAt > 0;
  }

  /**
   * Loads the directory when it was never loaded or is older than the refresh interval. A refresh
   * that fails keeps the last good directory for the channels already allowed (the failure is
   * logged) and is tried again a minute later, not on every call; only a first load that fails
   * fails the call.
   */
  async fresh(bounds: CallBounds): Promise<void> {
    const stale = Date.now() - this.#loadedAt > this.config.SLACK_CHANNEL_REFRESH_MIN * 60_000;
    if (!stale || Date.now() < this.#retryAt) return;
    const first = !this.loaded;
    this.#loading ??= this.load(bounds)
      .catch((error: unknown) => {
        if (first) throw error;
        this.#retryAt = Date.now() + RETRY_MS;
        this.logger.warn(
          { err: error },
          'the channel directory could not be refreshed: the last one is kept, tried again in a minute',
        );
      })
      .finally(() => {
        this.#loading = undefined;
      });
    await this.#loading;
  }

  /** Lists the workspace's channels the bot can see and resolves the configured entries. */
  async load(bounds: CallBounds): Promise<void> {
    const types = [
      'public_channel',
      'private_channel',
      ...(this.config.SLACK_ALLOW_DMS ? ['im', 'mpim'] : []),
    ];
    const all: ChannelInfo[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      if (++pages > MAX_PAGES) {
        // A bounded cost in a large workspace: entries beyond it are reported unresolved.
        this.logger.warn(
          { listed: all.length },
          `stopped listing channels after ${MAX_PAGES} pages; name channels by id to reach the rest`,
        );
        break;
      }
      const page = await this.slack.call(bounds, 'read', (c) =>
        c.conversations.list({
          types: types.join(','),
          limit: 200,
          exclude_archived: false,
          ...(cursor ? { cursor } : {}),
        }),
      );
      all.push(...((page.channels ?? []) as SlackChannel[]).map(info));
      cursor = page.response_metadata?.next_cursor || undefined;
    } while (cursor !== undefined);
    const byId = new Map(all.map((c) => [c.id, c]));
    const byName = new Map(all.filter((c) => !DIRECT(c)).map((c) => [c.name, c.id]));
    const unresolved: string[] = [];
    const resolve = (entries: readonly string[]): string[] =>
      entries.flatMap((entry) => {
        const id = entry.startsWith('#')
          ? byName.get(entry.slice(1))
          : byId.has(entry)
            ? entry
            : undefined;
        if (id === undefined) unresolved.push(entry);
        return id === undefined ? [] : [id];
      });
    const allowed = (ids: string[], variable: string): string[] => {
      const usable = ids.filter((id) => this.config.SLACK_ALLOW_DMS || !DIRECT(byId.get(id)!));
      if (usable.length === 0) return [];
      return new TargetScope({
        kind: 'slack',
        variable,
        noun: 'channel',
        configured: usable,
        allowTargets: this.config.GATEHOUSE_ALLOW_TARGETS,
      }).names.slice();
    };
    const person = this.slack.person;
    const read = allowed(resolve(this.config.SLACK_READ_CHANNELS), 'SLACK_READ_CHANNELS');
    if (read.length === 0 && !person) {
      throw new ConfigError([
        `SLACK_READ_CHANNELS: none of ${this.config.SLACK_READ_CHANNELS.join(', ')} is a channel the bot can see (and allowed)`,
      ]);
    }
    let post: string[] = [];
    try {
      post = allowed(resolve(this.config.SLACK_POST_CHANNELS), 'SLACK_POST_CHANNELS');
    } catch (error) {
      // The allow-list leaves no channel to post to: posting is allowed nowhere, reading goes on.
      if (!(error instanceof ConfigError)) throw error;
      this.logger.warn({ problems: error.problems }, 'no channel is left to post to');
    }
    this.#readable = new Map(read.map((id) => [id, byId.get(id)!]));
    // A channel the bot may post to is one it may read: the model sees where it writes.
    this.#postable = new Set(post.filter((id) => this.#readable.has(id)));
    const unreadable = post.filter((id) => !this.#readable.has(id));
    if (!person && unreadable.length > 0 && unreadable.join() !== this.#unreadablePosts.join()) {
      this.logger.warn(
        { channels: unreadable.map((id) => `#${byId.get(id)?.name ?? id}`) },
        'SLACK_POST_CHANNELS: channels not in SLACK_READ_CHANNELS are left out (the bot posts only where it can read)',
      );
    }
    this.#unreadablePosts = unreadable;
    this.#byName = new Map(
      [...this.#readable.values()].filter((c) => !DIRECT(c)).map((c) => [c.name, c.id]),
    );
    if (!person && unresolved.length > 0 && unresolved.join() !== this.unresolved.join()) {
      this.logger.warn({ unresolved }, 'configured channels the bot cannot see are left out');
    }
    this.unresolved = unresolved;
    this.#loadedAt = Date.now();
  }

  /** The readable channels, in configured order. */
  readable(): ChannelInfo[] {
    return [...this.#readable.values()];
  }

  /** Set at start: whether any write tool is on (writes off: no channel can be posted to). */
  writes = false;

  /**
   * Whether slack_post_message would really post here, as the list, the resources, the prompts
   * and the start-up log say: writes on, in SLACK_POST_CHANNELS, the bot a member, not archived,
   * and not Slack Connect unless SLACK_ALLOW_EXTERNAL_POSTS.
   */
  canPost(id: string): boolean {
    const c = this.#readable.get(id);
    return (
      this.writes &&
      c !== undefined &&
      this.#postable.has(id) &&
      c.is_member &&
      !c.is_archived &&
      (!c.is_external || this.config.SLACK_ALLOW_EXTERNAL_POSTS)
    );
  }

  /** The id a channel argument (id or #name) stands for, among the readable channels. */
  idOf(arg: string): string | undefined {
    const trimmed = arg.trim();
    if (trimmed.startsWith('#')) return this.#byName.get(trimmed.slice(1).toLowerCase());
    return this.#readable.has(trimmed) ? trimmed : undefined;
  }

  /** The audit/policy target of a channel argument: `slack:<id>`, or as given when unknown. */
  target(arg: string): string {
    return `slack:${this.idOf(arg) ?? arg.trim()}`;
  }

  describe(): string {
    return this.readable()
      .map((c) => (DIRECT(c) ? c.id : `#${c.name}`))
      .join(', ');
  }

  /** A channel the caller may read, or the refusal (no request is sent for it). */
  forRead(arg: string): ChannelInfo {
    const id = this.idOf(arg);
    if (id === undefined) {
      throw new PolicyError(
        'slack_channel_allow_list',
        this.slack.person
          ? `${arg} is not one of the channels you may read through this server (${this.describe() || 'none of its channels is one you can see in Slack'}).`
          : `${arg} is not one of the channels this server may read (${this.describe()}).`,
        { code: 'channel_not_allowed' },
      );
    }
    return this.#readable.get(id)!;
  }

  /** A channel the caller may post to, or the refusal (no request is sent for it). */
  forPost(arg: string): ChannelInfo {
    const channel = this.forRead(arg);
    if (!this.#postable.has(channel.id)) {
      const postable = [...this.#postable]
        .map((id) => `#${this.#readable.get(id)!.name}`)
        .join(', ');
      throw new PolicyError(
        'slack_post_allow_list',
        `${this.slack.person ? 'You may not post' : 'The bot may not post'} to #${channel.name} through this server${postable === '' ? '; posting is allowed in no channel (SLACK_POST_CHANNELS)' : ` (${this.slack.person ? 'you' : 'it'} may post to ${postable})`}.`,
        { code: 'channel_not_postable' },
      );
    }
    if (channel.is_external && !this.config.SLACK_ALLOW_EXTERNAL_POSTS) {
      throw new PolicyError(
        'slack_connect',
        `#${channel.name} is shared with another organisation (Slack Connect); posting there is off (SLACK_ALLOW_EXTERNAL_POSTS).`,
      );
    }
    if (channel.is_archived) {
      throw new PolicyError(
        'slack_archived',
        `#${channel.name} is archived; nothing can be posted there.`,
      );
    }
    return channel;
  }
}
