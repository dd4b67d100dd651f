import { ToolError, UpstreamError, withRetry } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import { boundedFetch, createUpstreamErrors, waitingOutRateLimits } from '@gatehouse/core/saas';
import type { BoundedFetch } from '@gatehouse/core/saas';
import type { UpstreamProfile } from '@gatehouse/core/saas';
import { createCloudClient } from 'jira.js/cloud';
import type { JiraConfig } from './config.js';
import { JiraHttpError, jiraTransport } from './transport.js';
import { projectScope } from './format.js';
import type { CallBounds } from '@gatehouse/core';
import { asPerson } from '@gatehouse/core/identity';
import type { PersonToken } from '@gatehouse/core/identity';

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
export function jiraError(error: unknown): UpstreamError | ToolError {
  // Ours already: an upstream error said once, or the answer asking a person to link again.
  if (error instanceof UpstreamError || error instanceof ToolError) return error;
  if (error instanceof JiraHttpError)
    return toUpstream({
      status: error.status,
      data: error.body,
      headers: error.headers,
      cause: error,
    });
  const cause = error instanceof TypeError && error.cause !== undefined ? error.cause : error;
  return toUpstream({ message: (cause as Error).message, cause: error });
}

/**
 * Whether a read may follow a redirect to `to`: the configured site, and a path that names an
 * allowed project — by an issue key (`…/issue/OPS-12…`) or its own key (`…/project/OPS…`).
 */
export function redirectAllowed(site: URL, to: URL, allows: (project: string) => boolean): boolean {
  if (to.origin !== site.origin || !to.pathname.startsWith(site.pathname)) return false;
  const named = /\/(?:issue\/([A-Z][A-Z0-9_]*)-\d+|project\/([A-Z][A-Z0-9_]*))(?:\/|$)/.exec(
    decodeURIComponent(to.pathname),
  );
  const project = named?.[1] ?? named?.[2];
  return project !== undefined && allows(project);
}

/** Acting as a person (ADR 0026): their token, renewed when Jira refuses it. */
export interface JiraPerson {
  /** Their site through Atlassian's gateway: `https://api.atlassian.com/ex/jira/{cloudId}`. */
  readonly host: string;
  readonly token: PersonToken;
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
  readonly #person: JiraPerson | undefined;

  constructor(
    config: JiraConfig,
    private readonly logger: Logger,
    options: JiraOptions = {},
    person?: JiraPerson,
  ) {
    const basic = config.JIRA_EMAIL !== undefined || config.JIRA_API_TOKEN !== undefined;
    this.#person = person;
    const host = (person?.host ?? config.JIRA_URL).replace(/\/$/, '');
    // No redirect is followed for a write; a read's only to an allowed project's issue or
    // project path on the configured site (through the gateway, for a person).
    const scope = projectScope(config);
    const site = new URL(`${host}/`);
    this.#bounded = boundedFetch(config.JIRA_REQUEST_TIMEOUT_MS, fetch, {
      followRead: (to) => redirectAllowed(site, to, (key) => scope.allows(key)),
    });
    this.api = createCloudClient(
      jiraTransport({
        host,
        authorization:
          person !== undefined
            ? () => `Bearer ${person.token.token()}`
            : basic
              ? `Basic ${Buffer.from(`${config.JIRA_EMAIL!}:${config.JIRA_API_TOKEN!}`).toString('base64')}`
              : `Bearer ${config.JIRA_OAUTH_TOKEN!}`,
        headers: { 'User-Agent': 'gatehouse-jira' },
        fetch: this.#bounded.fetch,
        onSchemaMismatch:
          options.onSchemaMismatch === 'throw'
            ? 'throw'
            : (report) => logger.debug({ report }, 'a Jira response differs from its schema'),
      }),
    );
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
        waitingOutRateLimits(() => this.#send(bounds, fn), {
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

  /** One request; acting as a person, a token Jira refuses (401) is renewed once (`asPerson`). */
  #send<T>(bounds: CallBounds, fn: (api: JiraApi) => Promise<T>): Promise<T> {
    const send = () => this.#bounded.within(bounds.signal, () => fn(this.api));
    return this.#person === undefined
      ? send()
      : asPerson(
          this.#person.token,
          (error) => error instanceof JiraHttpError && error.status === 401,
          send,
        );
  }
}
