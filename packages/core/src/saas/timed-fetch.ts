/**
 * The fetch every vendor client is given (ADR 0010): a per-request timeout that really fires —
 * each attempt (retries and rate-limit waits included get a fresh one) ends after `ms` even when
 * the vendor client ignores its own timeout options — joined to the call's signal so a cancelled
 * call stops at once; no redirect followed unless the server's rules re-check where it leads
 * (a write never); and no answer read that is not the JSON the vendor documents.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { traceUpstream, tracingEnabled } from '../tracing.js';

/** An upstream request that did not answer within its timeout. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  readonly code = 'ETIMEDOUT';
  constructor(readonly ms: number) {
    super(`the upstream did not answer within ${ms / 1000} s`);
  }
}

/**
 * The upstream answered a redirect this server does not follow: every redirect of a write (the
 * request would be sent, body and credentials with it, to an address nobody checked), and a
 * read's that leaves the configured host or the allow-list.
 */
export class RedirectRefusedError extends Error {
  override readonly name = 'RedirectRefusedError';
  constructor(
    readonly status: number,
    readonly write: boolean,
  ) {
    super(
      write
        ? `it answered a write with a redirect (${status}), which this server never follows: nothing was sent to the other address`
        : `it answered with a redirect (${status}) away from the configured host or the allowed targets, which this server does not follow`,
    );
  }
}

/**
 * The upstream answered with a body that is not the JSON its API documents (a proxy's or a
 * captive portal's HTML page, a load balancer's text): never read, never quoted.
 */
export class UnexpectedAnswerError extends Error {
  override readonly name = 'UnexpectedAnswerError';
  constructor(
    readonly status: number,
    readonly contentType: string,
  ) {
    super(
      `it answered ${status} with ${contentType.split(';')[0]!.trim().slice(0, 60) || 'a body of no declared type'} instead of JSON (something between this server and it — a proxy, a captive portal — may have answered); the body was not read`,
    );
  }
}

/** How a vendor client's requests may be answered. */
export interface FetchRules {
  /**
   * Whether a read (GET, HEAD) may follow a redirect from `from` to `to`: the configured host
   * and the server's allow-list, re-checked. Default: no redirect is followed. A write never is.
   */
  readonly followRead?: (to: URL, from: URL) => boolean;
  /**
   * Whether an answer with a body must be JSON (`application/json`, `…+json`); default true.
   * An answer that is not is refused unread ({@link UnexpectedAnswerError}).
   */
  readonly jsonOnly?: boolean;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** How many redirects a read may follow. */
const MAX_HOPS = 3;

function isJson(contentType: string | null): boolean {
  return contentType !== null && /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType);
}

/** Whether an answer carries a body (204, 304, HEAD and an empty length carry none). */
function hasBody(response: Response, method: string): boolean {
  return (
    method !== 'HEAD' &&
    response.status !== 204 &&
    response.status !== 304 &&
    response.headers.get('content-length') !== '0' &&
    response.body !== null
  );
}

/**
 * `fetch` with a timeout per request (the timeout surfaces as a {@link RequestTimeoutError}),
 * redirects never followed by the vendor's client (`redirect: 'manual'`) but by the rules
 * ({@link FetchRules}), and an answer that is not JSON refused unread.
 */
export function timedFetch(
  ms: number,
  base: typeof fetch = fetch,
  rules: FetchRules = {},
): typeof fetch {
  const send = async (input: Parameters<typeof fetch>[0], init: RequestInit | undefined) => {
    const timeout = AbortSignal.timeout(ms);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const options: RequestInit = { ...init, signal, redirect: 'manual' };
    try {
      if (!tracingEnabled()) return await base(input, options);
      const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
      const url = new URL(input instanceof Request ? input.url : String(input));
      // A CLIENT span: the method and the host, never the path or query.
      return await traceUpstream(
        `HTTP ${method}`,
        {
          'http.request.method': method,
          'server.address': url.hostname,
          ...(url.port === '' ? {} : { 'server.port': Number(url.port) }),
        },
        () => base(input, options),
        (response) => ({ 'http.response.status_code': response.status }),
      );
    } catch (error) {
      if (timeout.aborted && !(init?.signal?.aborted ?? false)) throw new RequestTimeoutError(ms);
      throw error;
    }
  };
  return async (input, init) => {
    const method = (
      init?.method ?? (input instanceof Request ? input.method : 'GET')
    ).toUpperCase();
    const read = method === 'GET' || method === 'HEAD';
    let url = new URL(input instanceof Request ? input.url : String(input));
    let response = await send(input, init);
    for (let hops = 0; REDIRECTS.has(response.status); hops++) {
      const location = response.headers.get('location');
      await response.body?.cancel();
      const to = location === null ? undefined : new URL(location, url);
      if (!read || to === undefined || hops === MAX_HOPS || rules.followRead?.(to, url) !== true) {
        throw new RedirectRefusedError(response.status, !read);
      }
      url = to;
      const headers = init?.headers ?? (input instanceof Request ? input.headers : undefined);
      response = await send(to.toString(), {
        ...init,
        method,
        ...(headers === undefined ? {} : { headers }),
      });
    }
    const type = response.headers.get('content-type');
    if ((rules.jsonOnly ?? true) && hasBody(response, method) && !isJson(type)) {
      // An empty body of no type is no answer to refuse (a 201 with nothing in it): only
      // whether a first byte comes is read, never what it is.
      const reader = response.body!.getReader();
      const first = await reader.read();
      if (first.done) {
        return new Response(null, { status: response.status, headers: response.headers });
      }
      await reader.cancel();
      throw new UnexpectedAnswerError(response.status, type ?? '');
    }
    return response;
  };
}

/** The signal of the call running in this async context (one per process: any client's fetch sees it). */
const runningCall = new AsyncLocalStorage<AbortSignal>();

/** What {@link boundedFetch} returns. */
export interface BoundedFetch {
  /** The fetch to hand the vendor client. */
  readonly fetch: typeof fetch;
  /** Runs `fn` with `signal` joined to every request it sends through {@link BoundedFetch.fetch}. */
  within<T>(signal: AbortSignal, fn: () => T): T;
}

/**
 * The fetch every vendor client gets: a timeout per request ({@link timedFetch}) and the running
 * call's signal (cancellation, deadline, shutdown), set by `within` for what a call sends — so a
 * client that takes no signal per request still stops when the call does.
 */
export function boundedFetch(
  ms: number,
  base: typeof fetch = fetch,
  rules: FetchRules = {},
): BoundedFetch {
  const timed = timedFetch(ms, base, rules);
  return {
    fetch: (input, init) => {
      const running = runningCall.getStore();
      const signal =
        running === undefined
          ? init?.signal
          : init?.signal
            ? AbortSignal.any([init.signal, running])
            : running;
      return timed(input, { ...init, ...(signal ? { signal } : {}) });
    },
    within: (signal, fn) => runningCall.run(signal, fn),
  };
}
