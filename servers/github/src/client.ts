import { ConfigError, ToolError, UpstreamError, withRetry } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import { createAppAuth } from '@octokit/auth-app';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import Bottleneck from 'bottleneck/light.js';
import type { GitHubConfig } from './config.js';

/**
 * Bottleneck (the scheduler inside the throttling plugin) yields to the event loop
 * with setTimeout(0) several times per job: with Node's 1 ms timer floor that is 10–15 ms per
 * request on a fast network. setImmediate keeps the yield (a macrotask, after I/O) without the
 * floor. Applied once, to the build the plugin imports (bottleneck/light.js); the tests check
 * the behaviour — no timer set from a yield point during a request.
 */
function fastBottleneckYield(): void {
  const store = Object.getPrototypeOf(
    (new Bottleneck() as unknown as { _store: object })._store,
  ) as {
    yieldLoop?: unknown;
  };
  // A Bottleneck without the yield point: nothing to patch (the test would show the timers).
  if (typeof store.yieldLoop !== 'function') return;
  store.yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
}
fastBottleneckYield();

/**
 * Octokit with GitHub's recommended rate-limit handling (the throttling plugin: pacing, and the
 * wait a rate limit asks for, when it fits the call's deadline). Retries of failed requests are
 * the core's withRetry, in the request hook below: it honours Retry-After, which the retry
 * plugin did not (it retried after a second whatever the answer said). The plugin adds options,
 * not methods, so the instance is typed as the plain REST client.
 */
const GatehouseOctokit = Octokit.plugin(throttling);

/** Methods that may be sent again after a failure (PATCH here only ever sets given values). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE']);

/** A request of GitHub's that did not answer within GITHUB_REQUEST_TIMEOUT_MS. */
class RequestTimeout extends Error {
  override readonly name = 'RequestTimeout';
  readonly code = 'ETIMEDOUT';
  constructor(readonly ms: number) {
    super(`GitHub did not answer within ${ms / 1000} s`);
  }
}

/**
 * fetch with a timeout of its own for each attempt (retries and rate-limit waits included get a
 * fresh one), joined to the call's signal: a slow answer ends at GITHUB_REQUEST_TIMEOUT_MS.
 */
function timedFetch(ms: number): typeof fetch {
  return async (input, init) => {
    const timeout = AbortSignal.timeout(ms);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    try {
      return await fetch(input, { ...init, signal });
    } catch (error) {
      if (timeout.aborted && !(init?.signal?.aborted ?? false)) throw new RequestTimeout(ms);
      throw error;
    }
  };
}
export type GitHub = Octokit;

/** What a call passes down to every request: its abort signal and deadline. */
export interface CallBounds {
  readonly signal: AbortSignal;
  readonly deadline: number;
}

/** Request options for one call: abort signal and the deadline the throttling plugin honours. */
export function requestOptions(bounds: CallBounds, extra: Record<string, unknown> = {}) {
  return { request: { signal: bounds.signal, gatehouseDeadline: bounds.deadline, ...extra } };
}

/** Builds the client: token or GitHub App auth, the configured base URL, throttling and retry. */
export function createGitHub(
  config: GitHubConfig,
  logger: Logger,
  version: string,
  /**
   * Extra options of the throttling plugin. Production leaves GitHub's recommended pacing
   * (writes 1/s, issue and comment creation 1 per 3 s, search 1 per 2 s); tests pass faster
   * Bottleneck groups and a shorter retry-after unit.
   */
  throttleOverrides: Record<string, unknown> = {},
): GitHub {
  const app =
    config.GITHUB_APP_ID !== undefined ||
    config.GITHUB_APP_PRIVATE_KEY !== undefined ||
    config.GITHUB_APP_INSTALLATION_ID !== undefined;
  if (app && config.GITHUB_TOKEN !== undefined) {
    throw new ConfigError([
      'GITHUB_TOKEN: set either a token or the GitHub App variables (GITHUB_APP_*), not both',
    ]);
  }
  if (
    app &&
    (config.GITHUB_APP_ID === undefined ||
      config.GITHUB_APP_PRIVATE_KEY === undefined ||
      config.GITHUB_APP_INSTALLATION_ID === undefined)
  ) {
    throw new ConfigError([
      'GITHUB_APP_ID: a GitHub App needs GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_APP_INSTALLATION_ID',
    ]);
  }
  if (!app && config.GITHUB_TOKEN === undefined) {
    throw new ConfigError([
      'GITHUB_TOKEN: required (or GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_APP_INSTALLATION_ID for a GitHub App)',
    ]);
  }
  // A rate-limited request is retried once, and only when the wait fits in the call's deadline.
  const mayWait = (retryAfter: number, options: unknown, retryCount: number): boolean => {
    const deadline = (options as { request?: { gatehouseDeadline?: number } }).request
      ?.gatehouseDeadline;
    const fits = deadline === undefined || Date.now() + retryAfter * 1000 < deadline - 500;
    return retryCount < 1 && fits;
  };
  const octokit = new GatehouseOctokit({
    baseUrl: config.GITHUB_API_URL.replace(/\/$/, ''),
    userAgent: `gatehouse-github/${version}`,
    ...(app
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
    throttle: {
      onRateLimit: (
        retryAfter: number,
        options: unknown,
        _octokit: unknown,
        retryCount: number,
      ) => {
        logger.warn({ retryAfter, retryCount }, 'GitHub primary rate limit reached');
        return mayWait(retryAfter, options, retryCount);
      },
      onSecondaryRateLimit: (
        retryAfter: number,
        options: unknown,
        _octokit: unknown,
        retryCount: number,
      ) => {
        logger.warn({ retryAfter, retryCount }, 'GitHub secondary rate limit reached');
        return mayWait(retryAfter, options, retryCount);
      },
      ...throttleOverrides,
    },
    request: { fetch: timedFetch(config.GITHUB_REQUEST_TIMEOUT_MS) },
  });
  // A failed idempotent request (5xx, timeout, network) is tried again — at most twice, after
  // the wait a Retry-After asks for or a jittered backoff, never past the call's deadline;
  // rate limits are the throttling plugin's. A write runs once unless it opts in.
  octokit.hook.wrap('request', (request, options) => {
    const own = options.request as
      { signal?: AbortSignal; gatehouseDeadline?: number; retries?: number } | undefined;
    const retryable = IDEMPOTENT.has(options.method) && own?.retries !== 0;
    return withRetry(
      async () => {
        try {
          return await request(options);
        } catch (error) {
          throw githubError(error);
        }
      },
      {
        idempotent: retryable,
        signal: own?.signal ?? new AbortController().signal,
        ...(own?.gatehouseDeadline === undefined ? {} : { deadline: own.gatehouseDeadline }),
        shouldRetry: (error) => !(error instanceof UpstreamError && error.status === 429),
        onRetry: (attempt, waitMs, error) =>
          logger.debug(
            { attempt, waitMs, err: error, url: options.url },
            'retrying a GitHub request',
          ),
      },
    );
  });
  return octokit;
}

interface OctokitError {
  status?: number;
  message?: string;
  response?: { headers?: Record<string, string | undefined>; data?: unknown };
  request?: { url?: string };
}

function retryAfterOf(headers: Record<string, string | undefined>): number | undefined {
  const retryAfter = Number(headers['retry-after']);
  if (Number.isFinite(retryAfter) && retryAfter > 0) return Math.ceil(retryAfter);
  if (headers['x-ratelimit-remaining'] === '0') {
    const reset = Number(headers['x-ratelimit-reset']);
    if (Number.isFinite(reset)) return Math.max(1, Math.ceil(reset - Date.now() / 1000));
  }
  return undefined;
}

function validationDetail(data: unknown): string {
  const errors = (data as { errors?: Array<Record<string, unknown>> } | undefined)?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return '';
  return `: ${errors
    .slice(0, 5)
    .map((e) =>
      typeof e.message === 'string'
        ? e.message
        : `${typeof e.field === 'string' ? e.field : '?'} ${typeof e.code === 'string' ? e.code : 'invalid'}${e.value === undefined ? '' : ` (${JSON.stringify(e.value)})`}`,
    )
    .join('; ')}`;
}

/**
 * The one place an upstream failure becomes what the model sees: not found vs no access vs
 * rate limited (with the wait) vs invalid (with GitHub's field errors) vs GitHub being down.
 * Tokens and request URLs never appear; 5xx detail goes to the log only.
 */
export function githubError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted === true) return signal.reason as unknown;
  if (error instanceof ToolError || error instanceof UpstreamError) return error;
  const e = error as OctokitError;
  const status = typeof e.status === 'number' ? e.status : undefined;
  const headers = e.response?.headers ?? {};
  const githubMessage =
    typeof (e.response?.data as { message?: unknown } | undefined)?.message === 'string'
      ? (e.response!.data as { message: string }).message
      : undefined;
  const requestId = headers['x-github-request-id'];
  const common = {
    service: 'GitHub',
    cause: error,
    ...(requestId === undefined ? {} : { requestId }),
  };
  const timedOut = error instanceof RequestTimeout ? error : (error as { cause?: unknown }).cause;
  if (timedOut instanceof RequestTimeout) {
    return new UpstreamError({
      ...common,
      status: 504,
      message: `it did not answer within ${timedOut.ms / 1000} s (GITHUB_REQUEST_TIMEOUT_MS)`,
      shown: true,
    });
  }
  if (status === undefined || (status === 500 && e.response === undefined)) {
    if (/timeout|timed out|aborted/i.test(String(e.message))) {
      return new UpstreamError({
        ...common,
        status: 504,
        message: 'GitHub did not answer in time',
      });
    }
    return new UpstreamError({ ...common, status: 503, message: 'GitHub is unreachable' });
  }
  const retryAfterSeconds = retryAfterOf(headers);
  const limited =
    status === 429 ||
    (status === 403 &&
      (retryAfterSeconds !== undefined || /rate limit/i.test(githubMessage ?? '')));
  if (limited) {
    return new UpstreamError({
      ...common,
      status: 429,
      message: /secondary/i.test(githubMessage ?? '') ? 'secondary rate limit' : 'rate limit',
      ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
    });
  }
  if (status === 401) {
    return new UpstreamError({
      ...common,
      status,
      message: "GitHub rejected this server's credentials; the operator must renew them",
    });
  }
  if (status === 403) {
    return new UpstreamError({
      ...common,
      status,
      message: `${githubMessage ?? 'forbidden'} (this server's credentials lack the permission)`,
    });
  }
  if (status === 404) {
    return new UpstreamError({
      ...common,
      status,
      message: 'no such repository, issue or comment, or this server cannot see it',
    });
  }
  if (status === 410) {
    return new UpstreamError({
      ...common,
      status,
      message: 'issues are disabled in this repository',
    });
  }
  if (status === 422 || status === 400) {
    return new UpstreamError({
      ...common,
      status,
      message: `${githubMessage ?? 'invalid request'}${validationDetail(e.response?.data)}`,
    });
  }
  return new UpstreamError({
    ...common,
    status,
    message: githubMessage ?? `status ${status}`,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
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
