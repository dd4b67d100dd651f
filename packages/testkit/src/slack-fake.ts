import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpFake, cursorPages } from './http-fake.js';
import type { FakeFailure, FakeResponse, RouteContext } from './http-fake.js';
import type { FakeOAuthApp } from './oauth-server.js';
import { SLACK_USER_SCOPES, SlackOAuth, slackOAuthRoutes } from './slack-oauth.js';

/**
 * A loopback Slack Web API for tests, on the testkit's fake framework: the methods a Gatehouse
 * server calls (auth.test, conversations.list/info/history/replies, users.info,
 * chat.postMessage), form-encoded or JSON bodies, Slack's way of failing (`ok: false` with HTTP
 * 200, 429 with Retry-After), cursor pagination in `response_metadata`, message metadata, channel
 * membership. Every response is captured for `validateSlackResponses` (recorded shapes).
 */

export interface FakeSlackUser {
  id: string;
  name: string;
  real_name: string;
  display_name: string;
  is_bot?: boolean;
}

export interface FakeSlackMessage {
  ts: string;
  user: string;
  text: string;
  thread_ts?: string;
  /** Replies, for a thread parent. */
  replies?: FakeSlackMessage[];
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  /** How it was posted (for posts by the bot): the flags and options Slack got. */
  posted?: Record<string, unknown>;
}

export interface FakeSlackChannel {
  id: string;
  name: string;
  is_private?: boolean;
  is_im?: boolean;
  is_mpim?: boolean;
  is_archived?: boolean;
  is_ext_shared?: boolean;
  is_pending_ext_shared?: boolean;
  topic?: string;
  purpose?: string;
  /** User ids of the members (the bot's own id when the bot is in). */
  members: string[];
  /** Newest last. */
  messages: FakeSlackMessage[];
}

export interface SlackWorld {
  team: { id: string; name: string; domain: string };
  bot: { user_id: string; bot_id: string; name: string };
  users: FakeSlackUser[];
  channels: FakeSlackChannel[];
}

export interface SlackFakeOptions {
  world: SlackWorld;
  /** Bot tokens the fake accepts, with the scopes each was granted (X-OAuth-Scopes). */
  tokens: Record<string, { scopes: readonly string[] }>;
  /**
   * The app's OAuth side (slack-oauth.ts): people (`users`: Slack user ids) link their own user
   * tokens, and a call with one acts as that person — their channels, their posts.
   */
  oauth?: FakeOAuthApp;
}

export interface SlackFake {
  /** The `slackApiUrl` for WebClient (ends with `/`). */
  readonly url: string;
  readonly world: SlackWorld;
  /** Every request, as `POST /api/method`. */
  readonly requests: string[];
  /** The method of every request, in order (`conversations.history`). */
  readonly calls: string[];
  readonly responses: FakeResponse[];
  /** Posts that broke a rule every post must keep (unfurls on, parse full…). */
  readonly violations: string[];
  /** HTTP-level failures (status, 429 with Retry-After, delays, lost answers). */
  fail(failure: FakeFailure): void;
  /** Drops every failure still queued. */
  clearFailures(): void;
  /** Slack's own kind of failure: the next call of `method` answers `ok: false` with `error`. */
  platformError(method: string, error: string, extra?: Record<string, unknown>): void;
  channel(idOrName: string): FakeSlackChannel;
  /** The app's user tokens, when `oauth` is configured: its clock, sign-in and grants. */
  readonly oauth: SlackOAuth | undefined;
  /** Where Slack's web pages (`/oauth/v2/authorize`, `/signin`) answer. */
  readonly rootUrl: string;
  close(): Promise<void>;
}

const SLACK_ERRORS = (code: string) => ({ ok: false, error: code });

/** Who calls: a bot token, or a person's user token (`user`: their Slack id). */
interface Caller {
  readonly token: string;
  readonly user?: string;
}

/** Parses a form-encoded or JSON body as Slack does (form values that are JSON stay strings). */
async function slackBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if ((req.headers['content-type'] ?? '').includes('application/json')) {
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  }
  return Object.fromEntries(new URLSearchParams(text));
}

/**
 * Slack's code for a token it does not take: its methods fail with HTTP 200 and `ok: false`
 * ("Web API basics", "Evaluating responses"), an expired rotating token with `token_expired`
 * ("Using token rotation"), any other with `invalid_auth`.
 */
const refusal =
  (oauth: SlackOAuth | undefined) =>
  (req: IncomingMessage): string => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    return token !== undefined && oauth?.expired(token) === true ? 'token_expired' : 'invalid_auth';
  };

const bool = (v: unknown): boolean | undefined =>
  v === undefined ? undefined : v === true || v === 'true' || v === '1';

export async function startSlackFake(options: SlackFakeOptions): Promise<SlackFake> {
  const { world } = options;
  const violations: string[] = [];
  const calls: string[] = [];
  const platformErrors: Array<{ method: string; body: Record<string, unknown> }> = [];
  // Messages get the time they are posted at, as on Slack: unique, increasing.
  let last = 0;
  const nextTs = () => {
    last = Math.max(Date.now() * 1000, last + 1);
    return `${Math.floor(last / 1e6)}.${String(last % 1e6).padStart(6, '0')}`;
  };

  const oauth = options.oauth === undefined ? undefined : new SlackOAuth(options.oauth, world.team);
  const http = new HttpFake<Caller>({
    prefix: '/api',
    // A bot token, or a person's user token (the call then acts as them).
    authenticate: (req) => {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (token === undefined) return undefined;
      if (options.tokens[token] !== undefined) return { token };
      const user = oauth?.holderOf(token);
      return user === undefined ? undefined : { token, user };
    },
    errorBody: (_status, message) => ({ ok: false, error: message }),
    failureMessage: (status) => (status >= 500 ? 'fatal_error' : 'invalid_arguments'),
    headers: () => ({ 'x-slack-req-id': randomBytes(8).toString('hex') }),
    rateLimitReply: (failure) => ({
      message: 'ratelimited',
      headers: { 'retry-after': String(failure.retryAfter ?? 30) },
    }),
    unauthorizedStatus: 200,
    unauthorized: refusal(oauth),
  });
  const channelOf = (id: unknown) => world.channels.find((c) => c.id === id);
  /** Who a call acts as: the person of a user token, else the bot. */
  const who = (cred: Caller) => cred.user ?? world.bot.user_id;
  const member = (c: FakeSlackChannel, cred: Caller) => c.members.includes(who(cred));
  const visible = (c: FakeSlackChannel, cred: Caller) =>
    (!c.is_private && !c.is_im && !c.is_mpim) || member(c, cred);
  const channelObject = (c: FakeSlackChannel, cred: Caller) => ({
    id: c.id,
    name: c.name,
    is_channel: !c.is_private && !c.is_im && !c.is_mpim,
    is_group: c.is_private === true,
    is_im: c.is_im === true,
    is_mpim: c.is_mpim === true,
    is_private: c.is_private === true || c.is_im === true || c.is_mpim === true,
    created: 1_700_000_000,
    is_archived: c.is_archived === true,
    is_general: false,
    name_normalized: c.name,
    is_shared: c.is_ext_shared === true,
    is_org_shared: false,
    is_ext_shared: c.is_ext_shared === true,
    is_pending_ext_shared: c.is_pending_ext_shared === true,
    pending_shared: [],
    context_team_id: world.team.id,
    shared_team_ids: [world.team.id],
    is_member: member(c, cred),
    topic: { value: c.topic ?? '', creator: '', last_set: 0 },
    purpose: { value: c.purpose ?? '', creator: '', last_set: 0 },
    previous_names: [],
    num_members: c.members.length,
  });
  const messageObject = (m: FakeSlackMessage, includeMetadata: boolean) => ({
    type: 'message',
    user: m.user,
    text: m.text,
    ts: m.ts,
    team: world.team.id,
    ...(m.thread_ts === undefined ? {} : { thread_ts: m.thread_ts }),
    ...(m.replies !== undefined && m.replies.length > 0
      ? {
          thread_ts: m.ts,
          reply_count: m.replies.length,
          reply_users_count: new Set(m.replies.map((r) => r.user)).size,
          latest_reply: m.replies.at(-1)!.ts,
        }
      : {}),
    ...(includeMetadata && m.metadata !== undefined ? { metadata: m.metadata } : {}),
  });

  type Ctx = RouteContext<Caller>;
  /**
   * A Slack method: POST /api/<method> with a form or JSON body (or GET with the query, as some
   * clients send reads), `ok: false` errors with HTTP 200.
   */
  const method = (
    name: string,
    handle: (args: Record<string, unknown>, ctx: Ctx) => Record<string, unknown> | string,
  ): void => {
    const serve = async (ctx: Ctx, args: Record<string, unknown>): Promise<void> => {
      calls.push(name);
      const injected = platformErrors.findIndex((e) => e.method === name);
      if (injected !== -1) {
        const { body } = platformErrors.splice(injected, 1)[0]!;
        return http.send(ctx.res, ctx.meta, 200, body);
      }
      const out = handle(args, ctx);
      http.send(
        ctx.res,
        ctx.meta,
        200,
        typeof out === 'string' ? SLACK_ERRORS(out) : { ok: true, ...out },
        name === 'auth.test'
          ? {
              'x-oauth-scopes':
                options.tokens[ctx.cred.token]?.scopes.join(',') ?? SLACK_USER_SCOPES,
            }
          : {},
      );
    };
    http.route('POST', `/${name}`, async (ctx) => serve(ctx, await slackBody(ctx.req)));
    http.route('GET', `/${name}`, (ctx) => serve(ctx, Object.fromEntries(ctx.url.searchParams)));
  };

  method('auth.test', (_args, { cred }) => ({
    url: `https://${world.team.domain}.slack.com/`,
    team: world.team.name,
    user:
      cred.user === undefined ? world.bot.name : world.users.find((u) => u.id === cred.user)?.name,
    team_id: world.team.id,
    user_id: who(cred),
    ...(cred.user === undefined ? { bot_id: world.bot.bot_id } : {}),
    is_enterprise_install: false,
  }));

  // [revoke] in slack-oauth.ts: the call's own token stops working.
  method('auth.revoke', (_args, { cred }) => ({
    revoked: oauth?.revoke(cred.token, false) === true,
  }));

  method('conversations.list', (args, { cred }) => {
    const types = (typeof args.types === 'string' ? args.types : 'public_channel').split(',');
    const wanted = (c: FakeSlackChannel) =>
      (c.is_im === true && types.includes('im')) ||
      (c.is_mpim === true && types.includes('mpim')) ||
      (c.is_private === true && !c.is_im && !c.is_mpim && types.includes('private_channel')) ||
      (!c.is_private && !c.is_im && !c.is_mpim && types.includes('public_channel'));
    const all = world.channels
      .filter((c) => visible(c, cred) && wanted(c))
      .filter((c) => !(bool(args.exclude_archived) === true && c.is_archived === true));
    const { page, next_cursor } = cursorPages(
      all,
      args.cursor as string | undefined,
      Number(args.limit ?? 100),
    );
    return {
      channels: page.map((c) => channelObject(c, cred)),
      response_metadata: { next_cursor },
    };
  });

  method('conversations.info', (args, { cred }) => {
    const c = channelOf(args.channel);
    return c === undefined || !visible(c, cred)
      ? 'channel_not_found'
      : { channel: channelObject(c, cred) };
  });

  method('conversations.history', (args, { cred }) => {
    const c = channelOf(args.channel);
    if (c === undefined || !visible(c, cred)) return 'channel_not_found';
    if (!member(c, cred)) return 'not_in_channel';
    const oldest = Number(args.oldest ?? 0);
    const latest = args.latest === undefined ? Infinity : Number(args.latest);
    const newestFirst = [...c.messages]
      .filter((m) => Number(m.ts) > oldest && Number(m.ts) < latest)
      .reverse();
    const limit = Math.min(999, Number(args.limit ?? 100));
    const { page, next_cursor } = cursorPages(
      newestFirst,
      args.cursor as string | undefined,
      limit,
    );
    const metadata = bool(args.include_all_metadata) === true;
    return {
      messages: page.map((m) => messageObject(m, metadata)),
      has_more: next_cursor !== '',
      pin_count: 0,
      response_metadata: { next_cursor },
    };
  });

  method('conversations.replies', (args, { cred }) => {
    const c = channelOf(args.channel);
    if (c === undefined || !visible(c, cred)) return 'channel_not_found';
    if (!member(c, cred)) return 'not_in_channel';
    const parent = c.messages.find((m) => m.ts === args.ts);
    if (parent === undefined) return 'thread_not_found';
    const thread = [parent, ...(parent.replies ?? [])];
    const { page, next_cursor } = cursorPages(
      thread,
      args.cursor as string | undefined,
      Number(args.limit ?? 100),
    );
    const metadata = bool(args.include_all_metadata) === true;
    return {
      messages: page.map((m) => messageObject(m, metadata)),
      has_more: next_cursor !== '',
      response_metadata: { next_cursor },
    };
  });

  method('users.info', (args) => {
    const u = world.users.find((x) => x.id === args.user);
    if (u === undefined) return 'user_not_found';
    return {
      user: {
        id: u.id,
        team_id: world.team.id,
        name: u.name,
        deleted: false,
        real_name: u.real_name,
        is_bot: u.is_bot === true,
        profile: {
          real_name: u.real_name,
          display_name: u.display_name,
          real_name_normalized: u.real_name,
          display_name_normalized: u.display_name,
          team: world.team.id,
        },
      },
    };
  });

  method('chat.postMessage', (args, { cred }) => {
    const c = channelOf(args.channel);
    if (c === undefined || !visible(c, cred)) return 'channel_not_found';
    if (!member(c, cred)) return 'not_in_channel';
    if (c.is_archived === true) return 'is_archived';
    const text = typeof args.text === 'string' ? args.text : '';
    if (text === '') return 'no_text';
    if (text.length > 40_000) return 'msg_too_long';
    // What every post from a Gatehouse server must say: nothing for Slack to fetch or expand.
    for (const [flag, want] of [
      ['unfurl_links', false],
      ['unfurl_media', false],
      ['link_names', false],
    ] as const) {
      if (bool(args[flag]) !== want) violations.push(`chat.postMessage without ${flag}=${want}`);
    }
    if (args.parse !== 'none') violations.push('chat.postMessage without parse=none');
    const metadata =
      typeof args.metadata === 'string'
        ? (JSON.parse(args.metadata) as FakeSlackMessage['metadata'])
        : (args.metadata as FakeSlackMessage['metadata']);
    const message: FakeSlackMessage = {
      ts: nextTs(),
      user: who(cred),
      text,
      ...(metadata === undefined ? {} : { metadata }),
      posted: { ...args },
    };
    if (typeof args.thread_ts === 'string') {
      const parent = c.messages.find((m) => m.ts === args.thread_ts);
      if (parent === undefined) return 'thread_not_found';
      message.thread_ts = parent.ts;
      (parent.replies ??= []).push(message);
    } else {
      c.messages.push(message);
    }
    return {
      channel: c.id,
      ts: message.ts,
      message: {
        ...messageObject(message, true),
        ...(cred.user === undefined ? { bot_id: world.bot.bot_id } : {}),
      },
    };
  });

  if (oauth !== undefined) slackOAuthRoutes(http, oauth);
  await http.listen();
  return {
    url: `${http.url}/`,
    oauth,
    rootUrl: http.url.replace(/\/api$/, ''),
    world,
    requests: http.requests,
    calls,
    responses: http.responses,
    violations,
    fail: (failure) => http.fail(failure),
    clearFailures: () => http.clearFailures(),
    platformError: (method, error, extra = {}) =>
      platformErrors.push({ method, body: { ok: false, error, ...extra } }),
    channel: (idOrName) => {
      const c = world.channels.find(
        (x) => x.id === idOrName || x.name === idOrName.replace(/^#/, ''),
      );
      if (c === undefined) throw new Error(`no channel ${idOrName} in the fake`);
      return c;
    },
    close: () => http.close(),
  };
}
