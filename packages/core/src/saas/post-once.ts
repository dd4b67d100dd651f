/**
 * Idempotent writes for APIs that have no idempotency key: the content carries a key derived
 * from who asked for what, and before posting — and again when a post fails without an answer
 * (timeout, 5xx, network) — the server looks for what that key made and returns it instead of
 * posting twice. How the key travels and how it is found is the vendor's part (an HTML comment
 * in a GitHub body, message metadata on Slack, an issue property on Jira).
 */
import { createHash } from 'node:crypto';

/** The key of a write: a hash of the principal and the exact content. */
export function dedupeKey(parts: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24);
}

/** Whether a failure leaves it unknown if the write happened (no 4xx answer). */
export function ambiguous(error: unknown): boolean {
  const status = (error as { status?: unknown }).status;
  return typeof status !== 'number' || status >= 500;
}

/**
 * Posts once: returns what an earlier identical write made (`deduplicated: true`), else posts;
 * when the post fails without an answer, looks again before reporting the failure. `mapError`
 * turns the failure into what the model sees (the vendor's upstream error mapping).
 */
export async function postOnce<T>(
  signal: AbortSignal,
  find: () => Promise<T | undefined>,
  post: () => Promise<T>,
  mapError: (error: unknown) => unknown = (error) => error,
): Promise<{ value: T; deduplicated: boolean }> {
  const earlier = await find();
  if (earlier !== undefined) return { value: earlier, deduplicated: true };
  try {
    return { value: await post(), deduplicated: false };
  } catch (error) {
    if (!signal.aborted && ambiguous(error)) {
      const made = await find().catch(() => undefined);
      if (made !== undefined) return { value: made, deduplicated: true };
    }
    throw signal.aborted ? (signal.reason as unknown) : mapError(error);
  }
}
