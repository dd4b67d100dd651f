import { UpstreamError, withRetry } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import { boundedFetch, createUpstreamErrors, waitingOutRateLimits } from '@gatehouse/core/saas';
import type { BoundedFetch } from '@gatehouse/core/saas';
import type { UpstreamProfile } from '@gatehouse/core/saas';
import { createCloudClient } from 'jira.js/cloud';
import { isApiError, isNetworkError, isRateLimitError } from 'jira.js/core';
import type { JiraConfig } from './config.js';
import type { CallBounds } from '@gatehouse/core';

export type JiraApi = ReturnType<typeof createCloudClient>;

/** What a call passes down to every request (the core's; ADR 0018). */
export type { CallBounds } from '@gatehouse/core';

function fieldErrors(data: unknown): string[] {
  const errors = (data as { errors?: Record<string, unknown> } | undefined)?.errors;
  return errors === undefined
    ? []
    : Object.entries(errors).map(([field, problem]) => `${field}: ${String(problem)}`);
}

/** Jira, as the kit's upstream error mapping needs to know it. */
export const JIRA_UPSTREAM: UpstreamProfile = {
  service: 'Jira',
  timeoutVariable: 'JIRA_REQUEST_TIMEOUT_MS',
  requestIdHeader: 'atl-traceid',
  notFound: 'no such issue or project, or this server cannot see it',
  fieldErrors,
};
const toUpstream = createUpstreamErrors(JIRA_UPSTREAM);

/** What the model sees of a failed Jira call. */
export function jiraError(error: unknown): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (isRateLimitError(error)) {
    const seconds =
      error.retryAfterMs === undefined ? undefined : Math.ceil(error.retryAfterMs / 1000);
    return toUpstream({
      status: 429,
      headers: seconds === undefined ? {} : { 'retry-after': String(seconds) },
      cause: error,
    });
  }
  if (isApiError(error))
    return toUpstream({ status: error.status, data: error.body, cause: error });
  const cause = isNetworkError(error) ? (error.cause ?? error) : error;
  return toUpstream({ message: (cause as Error).message, cause });
}

/**
 * jira.js 6 calls the global `fetch` and takes neither a fetch, a timeout nor a signal, so for
 * requests to the configured Jira site only, the process's fetch goes through the kit's bounded
 * fetch (JIRA_REQUEST_TIMEOUT_MS, and the running call's signal); every other request passes
 * through untouched. The one place a server patches the process (ADR 0018: a jira.js that takes a
 * fetch, or a client of our own, would end it).
 */
const sites = new Map<string, BoundedFetch>();
let original: typeof fetch | undefined;
function boundJiraFetch(origin: string, timeoutMs: number): BoundedFetch {
  if (original === undefined) {
    const base = globalThis.fetch;
    original = base;
    globalThis.fetch = (input, init) => {
      const href =
        typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const site = sites.get(new URL(href).origin);
      return site === undefined ? base(input, init) : site.fetch(input, init);
    };
  }
  const bounded = boundedFetch(timeoutMs, original);
  sites.set(origin, bounded);
  return bounded;
}

/** How the client waits; tests shorten a rate limit's second. */
export interface JiraOptions {
  readonly secondMs?: number;
  /** Tests: 'throw' to fail on any response that breaks jira.js's schemas. */
  readonly onSchemaMismatch?: 'warn' | 'throw';
}

/** The Jira Cloud client (jira.js 6) and the one way every call goes through it. */
export class Jira {
  readonly api: JiraApi;
  readonly #secondMs: number;
  readonly #bounded: BoundedFetch;

  constructor(
    config: JiraConfig,
    private readonly logger: Logger,
    options: JiraOptions = {},
  ) {
    const basic = config.JIRA_EMAIL !== undefined || config.JIRA_API_TOKEN !== undefined;
    const host = config.JIRA_URL.replace(/\/$/, '');
    this.#bounded = boundJiraFetch(new URL(host).origin, config.JIRA_REQUEST_TIMEOUT_MS);
    this.api = createCloudClient({
      host,
      auth: basic
        ? { type: 'basic', email: config.JIRA_EMAIL!, apiToken: config.JIRA_API_TOKEN! }
        : { type: 'bearer', token: config.JIRA_OAUTH_TOKEN! },
      headers: { 'User-Agent': 'gatehouse-jira' },
      onSchemaMismatch:
        options.onSchemaMismatch === 'throw'
          ? 'throw'
          : (report: unknown) =>
              logger.debug({ report }, 'a Jira response differs from its schema'),
    });
    this.#secondMs = options.secondMs ?? 1_000;
  }

  /**
   * One Jira call under the call's bounds: failures mapped for the model; reads retried through
   * passing failures (never a write: a 504 after a commit would create twice); a rate limit
   * waited out once when the wait ends before the deadline, else the wait in the error.
   */
  async call<T>(
    bounds: CallBounds,
    kind: 'read' | 'write',
    fn: (api: JiraApi) => Promise<T>,
  ): Promise<T> {
    return withRetry(
      () =>
        waitingOutRateLimits(() => this.#bounded.within(bounds.signal, () => fn(this.api)), {
          signal: bounds.signal,
          deadline: bounds.deadline,
          map: jiraError,
          secondMs: this.#secondMs,
          onWait: (wait) => this.logger.warn({ retryAfter: wait }, 'Jira rate limit reached'),
        }),
      {
        idempotent: kind === 'read',
        signal: bounds.signal,
        deadline: bounds.deadline,
        shouldRetry: (error) => !(error instanceof UpstreamError && error.status === 429),
      },
    );
  }
}
