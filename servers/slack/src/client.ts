import { ToolError, UpstreamError } from '@gatehouse/core';
import type { CallBounds, Logger } from '@gatehouse/core';
import {
  Pacer,
  boundedFetch,
  createUpstreamErrors,
  waitingOutRateLimits,
} from '@gatehouse/core/saas';
import type { BoundedFetch, UpstreamProfile } from '@gatehouse/core/saas';
import {
  LogLevel,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  WebClient,
} from '@slack/web-api';
import type { Logger as SlackLogger } from '@slack/web-api';
import type { SlackConfig } from './config.js';
import { asPerson } from '@gatehouse/core/identity';
import type { PersonToken } from '@gatehouse/core/identity';

/** What a call passes down to every request (the core's; ADR 0018). */
export type { CallBounds } from '@gatehouse/core';

/** Slack's `ok: false` codes, as the model should read them (status: the closest HTTP one). */
const CODES: Readonly<Record<string, readonly [number, string]>> = {
  channel_not_found: [404, 'the channel does not exist or the bot cannot see it'],
  thread_not_found: [404, 'no such thread in this channel'],
  message_not_found: [404, 'no such message'],
  user_not_found: [404, 'no such user'],
  not_in_channel: [403, 'the bot is not a member of this channel; invite it first (/invite @app)'],
  is_archived: [409, 'the channel is archived'],
  msg_too_long: [400, 'the message is too long'],
  no_text: [400, 'the message has no text'],
  invalid_cursor: [400, 'the cursor is invalid or expired; start again without it'],
  invalid_arguments: [400, 'Slack refused the arguments'],
  restricted_action: [403, 'a workspace setting prevents the bot from doing this'],
  ekm_access_denied: [403, 'the workspace’s key management denies access'],
  invalid_auth: [401, "Slack rejected this server's bot token; the operator must renew it"],
  not_authed: [401, 'Slack received no bot token; the operator must configure it'],
  account_inactive: [401, "the bot's token belongs to a deactivated app or user"],
  token_revoked: [401, "the bot's token was revoked; the operator must renew it"],
  token_expired: [401, "the bot's token expired; the operator must renew it"],
  ratelimited: [429, 'rate limit'],
  fatal_error: [503, 'Slack failed'],
  internal_error: [503, 'Slack failed'],
  service_unavailable: [503, 'Slack is unavailable'],
};

/**
 * The codes said differently when a call acts as a person (ADR 0026): their own membership,
 * their own rights, the app's user scopes.
 */
const PERSON_CODES: Readonly<Record<string, readonly [number, string]>> = {
  channel_not_found: [404, 'the channel does not exist or you cannot see it in Slack'],
  not_in_channel: [403, 'you are not a member of this channel in Slack; join it there first'],
  restricted_action: [403, 'a workspace setting prevents you from doing this in Slack'],
};

/** The codes of a token Slack no longer takes ("Using token rotation"; `auth.test`'s errors). */
const REFUSED_TOKEN = new Set(['invalid_auth', 'token_expired', 'token_revoked', 'not_authed']);

/** Whether Slack refused the token of a call (renewed once for a person). */
export function refusedToken(error: unknown): boolean {
  return error instanceof WebAPIPlatformError && REFUSED_TOKEN.has(String(error.data.error));
}

/** Slack, as the kit's upstream error mapping needs to know it. */
export const SLACK_UPSTREAM: UpstreamProfile = {
  service: 'Slack',
  timeoutVariable: 'SLACK_REQUEST_TIMEOUT_MS',
  requestIdHeader: 'x-slack-req-id',
  // An `ok: false` answer arrives with HTTP 200; its code decides (see slackError).
  classify: ({ data }) =>
    (data as { slack?: { status: number; message: string } } | undefined)?.slack,
};
const toUpstream = createUpstreamErrors(SLACK_UPSTREAM);

/** What the model sees of a failed Slack call (`person`: the call acted as a person). */
export function slackError(error: unknown, person = false): UpstreamError | ToolError {
  // Ours already (the history pacing): said as written.
  if (error instanceof UpstreamError || error instanceof ToolError) return error;
  if (error instanceof WebAPIRateLimitedError) {
    return toUpstream({
      status: 429,
      headers: { 'retry-after': String(error.retryAfter) },
      cause: error,
    });
  }
  if (error instanceof WebAPIPlatformError) {
    const code = String(error.data.error);
    const [status, message] = (person ? PERSON_CODES[code] : undefined) ??
      CODES[code] ?? [400, `Slack refused the call (${code})`];
    const needed = (error.data as { needed?: unknown }).needed;
    const scope = typeof needed === 'string' ? needed : '(unnamed)';
    const text =
      code === 'missing_scope'
        ? person
          ? `the Slack app lacks the user scope ${scope}; the operator must add it, then you link your account again`
          : `the Slack app lacks the scope ${scope}; add it to the app and reinstall`
        : message;
    return toUpstream({
      status: code === 'missing_scope' ? 403 : status,
      data: { slack: { status: code === 'missing_scope' ? 403 : status, message: text } },
      cause: error,
    });
  }
  if (error instanceof WebAPIHTTPError) {
    const headers = Object.fromEntries(
      Object.entries(error.headers).map(([k, v]) => [k.toLowerCase(), String(v)]),
    );
    return toUpstream({ status: error.statusCode, headers, cause: error });
  }
  const original = error instanceof WebAPIRequestError ? error.original : error;
  return toUpstream({ message: (original as Error).message, cause: original });
}

/** The Slack client's own logging, routed to ours at debug level (never stdout). */
function slackLogger(logger: Logger): SlackLogger {
  const at =
    (level: 'debug' | 'warn') =>
    (...msg: unknown[]) =>
      logger[level]({ slack: true }, msg.map(String).join(' '));
  return {
    debug: at('debug'),
    info: at('debug'),
    warn: at('warn'),
    error: at('warn'),
    setLevel: () => undefined,
    getLevel: () => LogLevel.DEBUG,
    setName: () => undefined,
  };
}

/** How the client waits; tests shorten a rate limit's second. */
export interface SlackPacing {
  readonly secondMs?: number;
}

/** The pacing of history reads: Slack limits them per app and workspace, so one per process. */
export function historyPacer(config: SlackConfig): Pacer {
  // Slack's 2025 limits for non-Marketplace apps: history and replies 1 per minute.
  return new Pacer({ history: config.SLACK_HISTORY_LIMITED ? 60_000 : 0 });
}

/**
 * Two WebClients with the settings the defaults get wrong for a server (ADR 0011): rate-limited
 * calls rejected at once (no 30-minute queue pause), no absolute URLs (the token would go there),
 * a per-request timeout that fires, the call's cancellation reaching the request; reads retried
 * twice through network failures, writes never (a lost answer would post twice). Acting as a
 * person, the clients carry their current token, and a token Slack refuses is renewed once.
 */
export class Slack {
  #clients: { token: string; read: WebClient; write: WebClient } | undefined;
  readonly #bounded: BoundedFetch;
  readonly #history: Pacer;
  readonly #secondMs: number;
  readonly #person: PersonToken | undefined;

  constructor(
    private readonly config: SlackConfig,
    private readonly logger: Logger,
    options: { pacing?: SlackPacing; history: Pacer; person?: PersonToken },
  ) {
    // A timeout per request, and the call's own signal (cancellation, deadline) on each.
    this.#bounded = boundedFetch(config.SLACK_REQUEST_TIMEOUT_MS);
    this.#history = options.history;
    this.#secondMs = options.pacing?.secondMs ?? 1_000;
    this.#person = options.person;
  }

  /** Whether calls act as a person (their token) rather than the app's bot. */
  get person(): boolean {
    return this.#person !== undefined;
  }

  /** The clients for the current token (made again when a person's token was renewed). */
  #client(kind: 'read' | 'write' | 'history'): WebClient {
    const token = this.#person?.token() ?? this.config.SLACK_BOT_TOKEN ?? '';
    if (this.#clients?.token !== token) {
      const common = {
        slackApiUrl: this.config.SLACK_API_URL,
        logger: slackLogger(this.logger),
        rejectRateLimitedCalls: true,
        allowAbsoluteUrls: false,
        fetch: this.#bounded.fetch,
        headers: { 'user-agent': 'gatehouse-slack' },
      };
      this.#clients = {
        token,
        read: new WebClient(token, {
          ...common,
          retryConfig: { retries: 2, factor: 2, minTimeout: 100, maxTimeout: 1_000 },
        }),
        write: new WebClient(token, { ...common, retryConfig: { retries: 0 } }),
      };
    }
    return kind === 'write' ? this.#clients.write : this.#clients.read;
  }

  /**
   * One request, as the bot or as the person (a token Slack refuses renewed once: `asPerson`).
   */
  #send<T>(
    bounds: CallBounds,
    kind: 'read' | 'write' | 'history',
    fn: (client: WebClient) => Promise<T>,
  ): Promise<T> {
    const send = () => this.#bounded.within(bounds.signal, () => fn(this.#client(kind)));
    return this.#person === undefined ? send() : asPerson(this.#person, refusedToken, send);
  }

  /** Messages per page at most (15 under the 2025 limits). */
  get maxPage(): number {
    return this.config.SLACK_HISTORY_LIMITED ? 15 : 200;
  }

  /** Whether a history read could be made now without waiting for the pacing (always, unlimited). */
  historyFree(): boolean {
    return !this.config.SLACK_HISTORY_LIMITED || this.#history.delayMs('history') === 0;
  }

  /**
   * Runs one Slack call under the call's bounds: its failures mapped for the model; a rate
   * limit waited out once when the wait ends before the deadline (a rate-limited call was not
   * processed, so this holds for writes too); history and replies paced in the limited mode.
   */
  async call<T>(
    bounds: CallBounds,
    kind: 'read' | 'write' | 'history',
    fn: (client: WebClient) => Promise<T>,
  ): Promise<T> {
    return waitingOutRateLimits(
      async () => {
        if (
          kind === 'history' &&
          !(await this.#history.wait('history', bounds.signal, bounds.deadline))
        ) {
          // Our own pacing, not Slack's answer: said in our words, never as Slack's rate limit.
          const seconds = Math.ceil(this.#history.delayMs('history') / 1000);
          throw new ToolError(
            `This server reads channel history at most once a minute (SLACK_HISTORY_LIMITED: Slack's limit for apps outside the Marketplace). Retry after ${seconds}s.`,
            { code: 'history_paced' },
          );
        }
        return this.#send(bounds, kind, fn);
      },
      {
        signal: bounds.signal,
        deadline: bounds.deadline,
        map: (error) => slackError(error, this.person),
        secondMs: this.#secondMs,
        onWait: (wait) => this.logger.warn({ retryAfter: wait }, 'Slack rate limit reached'),
      },
    );
  }
}
