import { ConfigError, ToolError, UpstreamError } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import { createAppAuth } from '@octokit/auth-app';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import Bottleneck from 'bottleneck/light.js';
import type { GitHubConfig } from './config.js';

/**
 * Bottleneck (the scheduler inside the throttling and retry plugins) yields to the event loop
 * with setTimeout(0) several times per job: with Node's 1 ms timer floor that is 10–15 ms per
 * request on a fast network. setImmediate keeps the yield (a macrotask, after I/O) without the
 * floor. Applied once, to the shared build the plugins import; checked by the tests.
 */
export function fastBottleneckYield(): boolean {
  const store = Object.getPrototypeOf(
    (new Bottleneck() as unknown as { _store: object })._store,
  ) as {
    yieldLoop?: unknown;
  };
  if (typeof store.yieldLoop !== 'function') return false;
  store.yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
  return true;
}
fastBottleneckYield();

/**
 * Octokit with GitHub's recommended rate-limit handling and retries. The plugins add options,
 * not methods the server calls, so the instance is typed as the plain REST client.
 */
const GatehouseOctokit = Octokit.plugin(throttling, retry) as unknown as typeof Octokit;
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
    // 5xx and network failures are retried (twice) for reads; writes opt out per request.
    retry: { doNotRetry: [400, 401, 403, 404, 410, 422, 451], retries: 2 },
  });
  // Every request ends at GITHUB_REQUEST_TIMEOUT_MS, or earlier when the call is aborted.
  octokit.hook.wrap('request', (request, options) => {
    const timeout = AbortSignal.timeout(config.GITHUB_REQUEST_TIMEOUT_MS);
    const own = (options.request as { signal?: AbortSignal } | undefined)?.signal;
    const signal = own === undefined ? timeout : AbortSignal.any([own, timeout]);
    return request({ ...options, request: { ...options.request, signal } });
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
  if (status === undefined) {
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
  return new UpstreamError({ ...common, status, message: githubMessage ?? `status ${status}` });
}

/** Runs one GitHub request, mapping failures with {@link githubError}. */
export async function call<T>(bounds: CallBounds, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw githubError(error, bounds.signal);
  }
}
