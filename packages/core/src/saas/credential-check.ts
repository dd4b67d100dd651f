/**
 * The opening every SaaS server's start-up check shares: bounds that fit a few requests (a retry
 * and a rate-limit wait included), and the first call — "who am I?" — whose 401 is the
 * credential's fault, said as a {@link CredentialError} naming the variable (exit 2).
 */
import type { CallBounds } from '../define.js';
import { CredentialError, UpstreamError } from '../errors.js';

/** Bounds for a start-up check: `requests` request timeouts from now. */
export function startupBounds(requestTimeoutMs: number, requests = 3): CallBounds {
  const ms = requestTimeoutMs * requests;
  return { signal: AbortSignal.timeout(ms), deadline: Date.now() + ms };
}

/**
 * Runs `fn` (the check's first call); a 401 — after `map`, the vendor's error mapping — becomes
 * a CredentialError for `variable` with `said(error)`, anything else is rethrown mapped.
 */
export async function checkCredential<T>(
  variable: string,
  said: (error: UpstreamError) => string,
  fn: () => Promise<T>,
  map: (error: unknown) => unknown = (error) => error,
): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    const mapped = map(error);
    if (mapped instanceof UpstreamError && mapped.status === 401)
      throw new CredentialError(variable, said(mapped));
    throw mapped;
  }
}
