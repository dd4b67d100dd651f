/**
 * The error model of the core (docs/errors.md).
 *
 * Handlers throw these; the pipeline turns them into what the client sees. A `ToolError` is a
 * business failure the model can act on and its message is shown as written. An
 * `UpstreamError` keeps the meaning of a 4xx (the caller can fix the request) and hides the
 * detail of a 5xx (the caller can only retry). Anything else is a bug: the client gets a
 * generic message with an incident id, the detail goes to the log only.
 */

/** A failure the model can recover from; `message` is shown to the model verbatim (sanitised). */
export class ToolError extends Error {
  override readonly name: string = 'ToolError';
  readonly code: string;
  constructor(message: string, options: { code?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code ?? 'tool_error';
  }
}

/**
 * A refusal by a policy layer of a server (a SQL rule, a repository or schema allow-list, a
 * failed role check): shown to the model like a {@link ToolError}, audited as `denied` with
 * `rule` — a security reviewer's first question is what was blocked, and by which rule.
 */
export class PolicyError extends ToolError {
  override readonly name: string = 'PolicyError';
  /** The rule that refused, stable for the audit trail (`sql:function_volatile`, `repo_allow_list`). */
  readonly rule: string;
  constructor(rule: string, message: string, options: { code?: string; cause?: unknown } = {}) {
    super(message, {
      code: options.code ?? 'denied',
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.rule = rule;
  }
}

/** Options of an {@link UpstreamError}. */
export interface UpstreamErrorOptions {
  /** The upstream service, as users know it: `GitHub`, `Slack`, `Jira`, `PostgreSQL`. */
  service: string;
  /** HTTP status (or the closest equivalent) the upstream answered with. */
  status: number;
  /** A message safe to show for a 4xx; never shown for a 5xx. */
  message?: string;
  /** The upstream's request id, for the audit trail and support tickets. */
  requestId?: string;
  /** Seconds after which a retry may succeed (from `Retry-After` or a reset header). */
  retryAfterSeconds?: number;
  /** The message is the server's own words (a timeout it measured), safe to show for a 5xx too. */
  shown?: boolean;
  cause?: unknown;
}

/**
 * A failed call to an upstream API. `toolMessage()` is what the model sees: 4xx keep their
 * meaning (not found, forbidden, invalid, rate limited), 5xx become a generic retry hint.
 */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  readonly code = 'upstream_error';
  readonly service: string;
  readonly status: number;
  readonly requestId: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly shown: boolean;
  constructor(options: UpstreamErrorOptions) {
    super(
      options.message ?? `${options.service} answered ${options.status}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.service = options.service;
    this.status = options.status;
    this.requestId = options.requestId;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.shown = options.shown === true;
  }

  /** The text the model gets for this failure. */
  toolMessage(): string {
    const { service, status } = this;
    const retry =
      this.retryAfterSeconds === undefined ? '' : ` Retry after ${this.retryAfterSeconds}s.`;
    if (status === 429) return `${service} rate limit reached.${retry || ' Retry later.'}`;
    if (status >= 500) {
      const what = this.shown ? `: ${this.message}` : '';
      return `${service} failed (${status})${what}; this is not caused by your request. Try again later.${retry}`;
    }
    const meaning =
      status === 401
        ? 'the server credentials were rejected'
        : status === 403
          ? 'access denied'
          : status === 404
            ? 'not found'
            : status === 409
              ? 'conflict'
              : status === 422 || status === 400
                ? 'the request was invalid'
                : 'the request was refused';
    return `${service} answered ${status} (${meaning}): ${this.message}`;
  }
}

/** Raised by `loadConfig` with every problem found, each naming its environment variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'config_invalid';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/**
 * The upstream refused the configured credentials, or they are not acceptable (a database role
 * that can write): thrown by a start-up check, it refuses the start (exit code 2) naming the
 * variable that holds them.
 */
export class CredentialError extends Error {
  override readonly name = 'CredentialError';
  constructor(
    /** The setting to fix (`GITHUB_TOKEN`, `POSTGRES_URL`). */
    readonly variable: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}
