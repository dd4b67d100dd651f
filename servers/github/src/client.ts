import { PolicyError, ToolError, UpstreamError, withRetry } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import {
  Pacer,
  createUpstreamErrors,
  refusedRedirect,
  timedFetch,
  waitingOutRateLimits,
} from '@gatehouse/core/saas';
import type { UpstreamProfile } from '@gatehouse/core/saas';
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { repoScope } from './scope.js';
import type { GitHubConfig } from './config.js';
import type { CallBounds } from '@gatehouse/core';
import { asPerson } from '@gatehouse/core/identity';
import type { PersonToken } from '@gatehouse/core/identity';

/** Methods that may be sent again after a failure (PATCH here only ever sets given values). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE']);

export type GitHub = Octokit;

/** What a call passes down to every request (the core's; ADR 0018). */
export type { CallBounds } from '@gatehouse/core';

/** Request options for one call: the abort signal, and the deadline waits must fit in. */
export function requestOptions(bounds: CallBounds, extra: Record<string, unknown> = {}) {
  return { request: { signal: bounds.signal, gatehouseDeadline: bounds.deadline, ...extra } };
}

/**
 * GitHub's advice against secondary rate limits, as pacing groups (milliseconds between two
 * requests of a group; the values of GitHub's own throttling plugin): at least a second between
 * writes, issues and comments (which notify people) one per 3 s, search 30 a minute. Reads are
 * not paced.
 */
export const GITHUB_PACING: Readonly<Record<string, number>> = {
  write: 1_000,
  create: 3_000,
  search: 2_000,
};

/** How the client paces and waits; tests shorten both. */
export interface GitHubPacing {
  /** Milliseconds between two requests of a group (see {@link GITHUB_PACING}). */
  readonly intervals?: Readonly<Record<string, number>>;
  /** The length of one second of a rate limit's wait (tests: 10 ms). */
  readonly secondMs?: number;
}

/** How a client acts as one person (acting.ts): their token, and their own pacing. */
export interface PersonAuth {
  readonly pacer: Pacer;
  readonly token: PersonToken;
}

/** A token GitHub refused (401): the request did nothing there, so it may be sent again. */
const unauthorized = (error: unknown) => error instanceof UpstreamError && error.status === 401;

/** A refusal GitHub made of a person, said as theirs: their account lacks the permission. */
function yours(error: unknown): unknown {
  if (!(error instanceof UpstreamError) || error.status !== 403) return error;
  if (!error.message.includes("this server's credentials")) return error;
  return new UpstreamError({
    service: error.service,
    status: 403,
    message: error.message.replace("this server's credentials", 'your GitHub account'),
    ...(error.requestId === undefined ? {} : { requestId: error.requestId }),
  });
}

/** The pacing of one GitHub account (the service's, or one person's). */
export function githubPacer(pacing: GitHubPacing = {}): Pacer {
  return new Pacer(pacing.intervals ?? GITHUB_PACING);
}

function paceGroup(method: string, url: string): string | undefined {
  if (url.startsWith('/search/')) return 'search';
  if (method === 'GET' || method === 'HEAD') return undefined;
  return method === 'POST' && /\/(issues|comments)$/.test(url) ? 'create' : 'write';
}

/**
 * Whether a read may follow a redirect to `to`: the configured API's origin and path, and a
 * repository path (`…/repos/{owner}/{repo}/…`) of an allowed repository.
 */
function withinScope(config: GitHubConfig, to: URL): boolean {
  const api = new URL(config.GITHUB_API_URL.replace(/\/?$/, '/'));
  if (to.origin !== api.origin || !to.pathname.startsWith(api.pathname)) return false;
  const rest = to.pathname.slice(api.pathname.length).split('/');
  if (rest[0] !== 'repos' || rest[1] === undefined || rest[2] === undefined) return false;
  const name = `${decodeURIComponent(rest[1])}/${decodeURIComponent(rest[2])}`;
  return repoScope(config).allows(name);
}

/**
 * Builds the client: token or GitHub App auth, the configured base URL, and one request hook
 * for everything between a call and GitHub — pacing (GitHub's advice), the wait a rate limit
 * asks for when it fits the call's deadline (once), retries of failed idempotent requests
 * (the core's withRetry: Retry-After honoured), the per-request timeout, and the mapping of
 * every failure to what the model sees.
 */
export function createGitHub(
  config: GitHubConfig,
  logger: Logger,
  version: string,
  pacing: GitHubPacing = {},
  /** Acting as a person (ADR 0026): their token, renewed when GitHub refuses it. */
  person?: PersonAuth,
): GitHub {
  const app =
    config.GITHUB_APP_ID !== undefined ||
    config.GITHUB_APP_PRIVATE_KEY !== undefined ||
    config.GITHUB_APP_INSTALLATION_ID !== undefined;
  const pacer = person?.pacer ?? githubPacer(pacing);
  const secondMs = pacing.secondMs ?? 1_000;
  const octokit = new Octokit({
    baseUrl: config.GITHUB_API_URL.replace(/\/$/, ''),
    userAgent: `gatehouse-github/${version}`,
    // A person's token is set on each request below (it rotates); none is fixed here.
    ...(person !== undefined
      ? {}
      : app
        ? {
            authStrategy: createAppAuth,
            auth: {
              appId: Number(config.GITHUB_APP_ID),
              privateKey: config.GITHUB_APP_PRIVATE_KEY,
              installationId: Number(config.GITHUB_APP_INSTALLATION_ID),
            },
          }
        : { auth: config.GITHUB_TOKEN }),
    // Octokit's own logging would print request URLs on stdout-adjacent consoles; route it.
    log: {
      debug: (message: string) => logger.debug({ octokit: true }, message),
      info: (message: string) => logger.debug({ octokit: true }, message),
      warn: (message: string) => logger.warn({ octokit: true }, message),
      error: (message: string) => logger.warn({ octokit: true }, message),
    },
    // No redirect is followed for a write; a read's only to an allowed repository on the
    // configured host (a renamed repository's redirect is refused: update GITHUB_REPOS).
    request: {
      fetch: timedFetch(config.GITHUB_REQUEST_TIMEOUT_MS, fetch, {
        followRead: (to) => withinScope(config, to),
      }),
    },
  });
  octokit.hook.wrap('request', (request, options) => {
    const own = options.request as
      { signal?: AbortSignal; gatehouseDeadline?: number; retries?: number } | undefined;
    const signal = own?.signal ?? new AbortController().signal;
    const deadline = own?.gatehouseDeadline;
    const group = paceGroup(options.method, options.url);
    /** One request, paced; a rate limit is waited out once when the wait fits the deadline. */
    const attempt = () =>
      waitingOutRateLimits(
        async () => {
          if (group !== undefined && !(await pacer.wait(group, signal, deadline))) {
            throw new UpstreamError({ service: 'GitHub', status: 429, message: 'paced' });
          }
          if (person !== undefined) options.headers.authorization = `token ${person.token.token()}`;
          return request(options);
        },
        {
          signal,
          deadline,
          map: (error) => githubError(error),
          secondMs,
          onWait: (wait, mapped) =>
            logger.warn({ retryAfter: wait, url: options.url }, `GitHub ${mapped.message} reached`),
        },
      );
    // A failed idempotent request (5xx, timeout, network) is tried again — at most twice, after
    // the wait a Retry-After asks for or a jittered backoff, never past the call's deadline;
    // rate limits are handled above. A write runs once unless it opts in.
    const run = () =>
      withRetry(attempt, {
        idempotent: IDEMPOTENT.has(options.method) && own?.retries !== 0,
        signal,
        ...(deadline === undefined ? {} : { deadline }),
        shouldRetry: (error) => !(error instanceof UpstreamError && error.status === 429),
        onRetry: (n, waitMs, error) =>
          logger.debug(
            { attempt: n, waitMs, err: error, url: options.url },
            'retrying a GitHub request',
          ),
      });
    return person === undefined
      ? run()
      : // A 403 to a person is theirs, not the server's.
        asPerson(person.token, unauthorized, run).catch((error: unknown) => {
          throw yours(error);
        });
  });
  return octokit;
}

interface OctokitError {
  status?: number;
  message?: string;
  response?: { headers?: Record<string, string | undefined>; data?: unknown };
}

function validationDetail(data: unknown): string[] {
  const errors = (data as { errors?: Array<Record<string, unknown>> } | undefined)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors.map((e) =>
    typeof e.message === 'string'
      ? e.message
      : `${typeof e.field === 'string' ? e.field : '?'} ${typeof e.code === 'string' ? e.code : 'invalid'}${e.value === undefined ? '' : ` (${JSON.stringify(e.value)})`}`,
  );
}

/** GitHub, as the kit's upstream error mapping needs to know it. */
export const GITHUB_UPSTREAM: UpstreamProfile = {
  service: 'GitHub',
  timeoutVariable: 'GITHUB_REQUEST_TIMEOUT_MS',
  requestIdHeader: 'x-github-request-id',
  reset: {
    remaining: 'x-ratelimit-remaining',
    reset: 'x-ratelimit-reset',
    format: 'epoch-seconds',
  },
  notFound: 'no such repository, issue or comment, or this server cannot see it',
  fieldErrors: validationDetail,
  classify: ({ status, vendorMessage, retryAfter }) => {
    // GitHub answers a secondary rate limit (and an exhausted quota) with a 403 as well.
    const limited =
      status === 429 ||
      (status === 403 && (retryAfter !== undefined || /rate limit/i.test(vendorMessage ?? '')));
    if (limited) {
      const secondary = /secondary/i.test(vendorMessage ?? '');
      return { status: 429, message: secondary ? 'secondary rate limit' : 'rate limit' };
    }
    if (status === 410) return { status, message: 'issues are disabled in this repository' };
    return undefined;
  },
};
const mapGitHub = createUpstreamErrors(GITHUB_UPSTREAM);

/**
 * What the model sees of a failed GitHub request (the kit's mapping, told about GitHub's
 * quirks): not found vs no access vs rate limited (with the wait) vs invalid (with GitHub's
 * field errors) vs GitHub being down. A call that was cancelled fails with its signal's reason.
 */
export function githubError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted === true) return signal.reason as unknown;
  if (error instanceof ToolError || error instanceof UpstreamError) return error;
  // A read GitHub redirected outside the allowed repositories (a transferred issue, a renamed
  // repository): the allow-list's refusal, naming nothing of where it went.
  const redirect = refusedRedirect(error);
  if (redirect !== undefined && !redirect.write) {
    return new PolicyError(
      'repo_allow_list',
      `GitHub answered that it moved (${redirect.status}) to a place outside this server's repositories, which this server does not follow.`,
    );
  }
  const e = error as OctokitError;
  // Octokit reports a request that never got an answer as a 500 without a response.
  const answered = typeof e.status === 'number' && !(e.status === 500 && e.response === undefined);
  return mapGitHub({
    status: answered ? e.status : undefined,
    headers: e.response?.headers ?? {},
    data: e.response?.data,
    message: e.message,
    cause: error,
  });
}

/** Runs one GitHub request, mapping failures with {@link githubError}. */
export async function call<T>(bounds: CallBounds, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw githubError(error, bounds.signal);
  }
}
