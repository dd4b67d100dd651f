import { UpstreamError } from '../errors.js';

/**
 * Rate limits of SaaS APIs: how long the vendor asks us to wait, and whether a call may wait
 * that long. A wait is taken only when it ends before the call's deadline (with a margin for
 * the request itself), and only a bounded number of times; otherwise the model gets the rate
 * limit with the wait, at once, instead of a timeout later.
 */

/** Where a vendor says when a quota resets, besides Retry-After. */
export interface ResetHeaders {
  /** The header that reads `0` when the quota is used up (`x-ratelimit-remaining`). */
  readonly remaining: string;
  /** The header with the reset time (`x-ratelimit-reset`). */
  readonly reset: string;
  /** `epoch-seconds` (GitHub) or `date` (an ISO or HTTP date, Jira). */
  readonly format: 'epoch-seconds' | 'date';
}

/** Seconds to wait, from Retry-After (seconds or an HTTP date) or an exhausted quota's reset. */
export function retryAfterSeconds(
  headers: Readonly<Record<string, string | undefined>>,
  reset?: ResetHeaders,
  now = Date.now(),
): number | undefined {
  const header = headers['retry-after'];
  if (header !== undefined && header !== '') {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds > 0) return Math.ceil(seconds);
    const date = Date.parse(header);
    if (Number.isFinite(date)) return Math.max(1, Math.ceil((date - now) / 1000));
  }
  if (reset !== undefined && headers[reset.remaining] === '0') {
    const value = headers[reset.reset];
    const at =
      reset.format === 'epoch-seconds' ? Number(value) * 1000 : Date.parse(String(value ?? ''));
    if (Number.isFinite(at)) return Math.max(1, Math.ceil((at - now) / 1000));
  }
  return undefined;
}

/** Options of {@link mayWait}. */
export interface WaitRule {
  /** Epoch ms by which the call must be answered; no deadline means any wait fits. */
  readonly deadline?: number | undefined;
  /** Waits already taken for this request. */
  readonly waited: number;
  /** At most this many waits per request (default 1). */
  readonly maxWaits?: number;
  /** Time kept for the request after the wait (default 500 ms). */
  readonly marginMs?: number;
  readonly now?: number;
}

/** Whether a request may wait `seconds` for a rate limit and try again. */
export function mayWait(seconds: number, rule: WaitRule): boolean {
  if (rule.waited >= (rule.maxWaits ?? 1)) return false;
  if (rule.deadline === undefined) return true;
  const now = rule.now ?? Date.now();
  return now + seconds * 1000 < rule.deadline - (rule.marginMs ?? 500);
}

/**
 * Paces requests per group: at most one request starts per `minIntervalMs` of its group (a
 * vendor's advice against secondary limits, e.g. GitHub: one content-creating request per
 * second). A wait that would pass the deadline is not taken: `false`, and nothing was sent.
 */
export class Pacer {
  readonly #next = new Map<string, number>();
  constructor(private readonly intervals: Readonly<Record<string, number>>) {}

  /** Milliseconds until a request of `group` may start. */
  delayMs(group: string): number {
    return Math.max(0, (this.#next.get(group) ?? 0) - Date.now());
  }

  async wait(group: string, signal: AbortSignal, deadline?: number): Promise<boolean> {
    const interval = this.intervals[group] ?? 0;
    if (interval <= 0) return true;
    const now = Date.now();
    const at = Math.max(now, this.#next.get(group) ?? 0);
    if (deadline !== undefined && at >= deadline) return false;
    this.#next.set(group, at + interval);
    if (at > now) await sleep(at - now, signal);
    return true;
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it fires first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Options of {@link waitingOutRateLimits}. */
export interface RateLimitWaitOptions {
  readonly signal: AbortSignal;
  /** Epoch ms by which the call must be answered. */
  readonly deadline?: number | undefined;
  /** Turns a failure into what the model sees (the vendor's upstream error mapping). */
  readonly map: (error: unknown) => unknown;
  /** Waits per request (default 1). */
  readonly maxWaits?: number;
  /** The length of one second of a wait (tests shorten it). */
  readonly secondMs?: number;
  /** Called before each wait (for the log). */
  readonly onWait?: (seconds: number, error: UpstreamError) => void;
}

/**
 * Runs `attempt`; when it fails with a rate limit (an UpstreamError 429 that says how long to
 * wait) and the wait fits the deadline ({@link mayWait}), waits and tries again — once by default.
 * A rate-limited request was not processed, so this holds for writes too. Every other failure,
 * and a wait that does not fit, is thrown as `map` made it; a cancelled call throws its reason.
 */
export async function waitingOutRateLimits<T>(
  attempt: () => Promise<T>,
  options: RateLimitWaitOptions,
): Promise<T> {
  for (let waited = 0; ; waited++) {
    try {
      return await attempt();
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason as Error;
      const mapped = options.map(error);
      const wait =
        mapped instanceof UpstreamError && mapped.status === 429
          ? mapped.retryAfterSeconds
          : undefined;
      const rule = {
        deadline: options.deadline,
        waited,
        ...(options.maxWaits === undefined ? {} : { maxWaits: options.maxWaits }),
      };
      if (wait === undefined || !mayWait(wait, rule)) throw mapped;
      options.onWait?.(wait, mapped as UpstreamError);
      await sleep(wait * (options.secondMs ?? 1_000), options.signal);
    }
  }
}
