import { UpstreamError } from './errors.js';

/** Options of {@link withRetry}. */
export interface RetryOptions {
  /** Only idempotent calls are retried; a create or a post runs once. */
  idempotent: boolean;
  /** The caller's signal: no retry is started after it fires. */
  signal: AbortSignal;
  /** Epoch ms by which the call must be answered; a wait that would pass it is not taken. */
  deadline?: number;
  attempts?: number;
  baseMs?: number;
  maxMs?: number;
  /** A further condition for a retry, after {@link isRetryable} (e.g. leave rate limits to a limiter). */
  shouldRetry?: (error: unknown) => boolean;
  /** Called before each retry (for the audit's retry count and logs). */
  onRetry?: (attempt: number, waitMs: number, error: unknown) => void;
  /** Test seam for the jitter. */
  random?: () => number;
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);
const RETRYABLE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

/** Whether a failure may succeed when tried again. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof UpstreamError) return RETRYABLE_STATUS.has(error.status);
  const code =
    (error as { code?: unknown; cause?: { code?: unknown } } | undefined)?.code ??
    (error as { cause?: { code?: unknown } })?.cause?.code;
  return typeof code === 'string' && RETRYABLE_CODES.has(code);
}

/**
 * The one retry helper for upstream calls (docs/errors.md): exponential backoff with full jitter,
 * `Retry-After` honoured (an UpstreamError's `retryAfterSeconds`), never past the caller's
 * deadline or signal, and only for idempotent calls.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const attempts = options.idempotent ? (options.attempts ?? 3) : 1;
  const base = options.baseMs ?? 200;
  const max = options.maxMs ?? 5_000;
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (
        attempt >= attempts ||
        !isRetryable(error) ||
        options.shouldRetry?.(error) === false ||
        options.signal.aborted
      ) {
        throw error;
      }
      const hinted = error instanceof UpstreamError ? error.retryAfterSeconds : undefined;
      const wait =
        hinted !== undefined
          ? hinted * 1000
          : Math.round(random() * Math.min(max, base * 2 ** (attempt - 1)));
      if (options.deadline !== undefined && Date.now() + wait >= options.deadline) throw error;
      if (hinted !== undefined && wait > max * 6) throw error; // a reset far away: say so now
      options.onRetry?.(attempt, wait, error);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, wait);
        options.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            reject(options.signal.reason as Error);
          },
          { once: true },
        );
      });
    }
  }
}
