/**
 * Idempotent writes for APIs that have no idempotency key: the content carries a key derived
 * from who asked for what, and before posting — and again when a post fails without an answer
 * (timeout, 5xx, network) — the server looks for what that key made and returns it instead of
 * posting twice. How the key travels and how it is found is the vendor's part (an HTML comment
 * in a GitHub body, message metadata on Slack, an issue property on Jira).
 */
import { createHash } from 'node:crypto';
import { PolicyError, UpstreamError } from '../errors.js';

/** The key of a write: a hash of the principal and the exact content. */
export function dedupeKey(parts: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24);
}

/** Whether a failure leaves it unknown if the write happened (no 4xx answer). */
export function ambiguous(error: unknown): boolean {
  const status = (error as { status?: unknown }).status;
  return typeof status !== 'number' || status >= 500;
}

/** What {@link postOnce} did. */
export interface PostOutcome<T> {
  value: T;
  /** An identical write existed before this call: nothing new was sent. */
  deduplicated: boolean;
  /** This call's write went through, but its answer was lost; it was found afterwards. */
  recovered: boolean;
  /**
   * Set when the look for an earlier write failed and the write went ahead anyway
   * (`onLookupFailure: 'post'`): why. The answer must say so — a retry may have made a duplicate.
   */
  unchecked?: string;
}

/** Options of {@link postOnce}. */
export interface PostOnceOptions<T = unknown> {
  /** Turns a failure into what the model sees (the vendor's upstream error mapping). */
  mapError?: (error: unknown) => unknown;
  /**
   * When the look for an earlier write fails before posting: `refuse` (the default) reports the
   * failure and sends nothing; `post` writes anyway and reports `unchecked`.
   */
  onLookupFailure?: 'refuse' | 'post';
  /**
   * How to look for this call's own write after the post failed without an answer (default:
   * `find`) — a vendor whose search lags behind its writes looks more patiently here.
   */
  recover?: () => Promise<T | undefined>;
}

/**
 * Posts once: returns what an earlier identical write made (`deduplicated`), else posts; when
 * the post fails without an answer, looks again before reporting the failure (`recovered`). A
 * {@link PolicyError} from `find` refuses the call whatever `onLookupFailure` says.
 */
export async function postOnce<T>(
  signal: AbortSignal,
  find: () => Promise<T | undefined>,
  post: () => Promise<T>,
  options: PostOnceOptions<T> = {},
): Promise<PostOutcome<T>> {
  const mapError = options.mapError ?? ((error: unknown) => error);
  let unchecked: string | undefined;
  try {
    const earlier = await find();
    if (earlier !== undefined) return { value: earlier, deduplicated: true, recovered: false };
  } catch (error) {
    // A refusal from the lookup (the vendor's part knows a post now could duplicate) is never
    // a failed lookup to post past.
    if (error instanceof PolicyError) throw error;
    if (signal.aborted || options.onLookupFailure !== 'post') throw mapError(error);
    const mapped = mapError(error);
    unchecked =
      mapped instanceof UpstreamError
        ? mapped.toolMessage()
        : mapped instanceof Error
          ? mapped.message
          : String(mapped);
  }
  const outcome = (value: T, recovered: boolean): PostOutcome<T> => ({
    value,
    deduplicated: false,
    recovered,
    ...(unchecked === undefined ? {} : { unchecked }),
  });
  try {
    return outcome(await post(), false);
  } catch (error) {
    if (!signal.aborted && ambiguous(error)) {
      const made = await (options.recover ?? find)().catch(() => undefined);
      if (made !== undefined) return outcome(made, true);
    }
    throw signal.aborted ? (signal.reason as unknown) : mapError(error);
  }
}
