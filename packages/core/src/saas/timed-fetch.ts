/**
 * A per-request timeout that really fires: each attempt (retries and rate-limit waits included
 * get a fresh one) ends after `ms` even when the vendor client ignores its own timeout options,
 * joined to the call's signal so a cancelled call stops at once.
 */

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
      return await base(input, { ...init, signal });
    } catch (error) {
      if (timeout.aborted && !(init?.signal?.aborted ?? false)) throw new RequestTimeoutError(ms);
      throw error;
    }
  };
}
