/**
 * A per-request timeout that really fires: each attempt (retries and rate-limit waits included
 * get a fresh one) ends after `ms` even when the vendor client ignores its own timeout options,
 * joined to the call's signal so a cancelled call stops at once.
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

/** `fetch` with a timeout per request; the timeout surfaces as a {@link RequestTimeoutError}. */
export function timedFetch(ms: number, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const timeout = AbortSignal.timeout(ms);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    try {
      if (!tracingEnabled()) return await base(input, { ...init, signal });
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
        () => base(input, { ...init, signal }),
        (response) => ({ 'http.response.status_code': response.status }),
      );
    } catch (error) {
      if (timeout.aborted && !(init?.signal?.aborted ?? false)) throw new RequestTimeoutError(ms);
      throw error;
    }
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
export function boundedFetch(ms: number, base: typeof fetch = fetch): BoundedFetch {
  const timed = timedFetch(ms, base);
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
