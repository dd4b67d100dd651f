import { createHash } from 'node:crypto';
import type { CallBounds, GitHub } from './client.js';
import { call, githubError, requestOptions } from './client.js';
import type { GitHubIssue } from './format.js';
import type { RepoRef } from './scope.js';

/**
 * Idempotent creates and comments: the body carries an HTML comment with a key derived from who
 * asked for what (`<!-- gatehouse:3f2a… -->`, invisible when rendered). Before posting, and
 * again when a post fails without an answer (timeout, 5xx, network), the server looks for an
 * issue or comment with that key created in the dedupe window and returns it instead of
 * posting twice. Search is not used: its index lags; listing by recency is consistent.
 */

/** The key of a write: a hash of the principal and the exact content. */
export function dedupeKey(parts: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24);
}

export function marker(key: string): string {
  return `<!-- gatehouse:${key} -->`;
}

export function withMarker(body: string, key: string): string {
  return `${body}${body === '' ? '' : '\n\n'}${marker(key)}`;
}

/** Whether a failure leaves it unknown if the write happened (no 4xx answer). */
export function ambiguous(error: unknown): boolean {
  const status = (error as { status?: unknown }).status;
  return typeof status !== 'number' || status >= 500;
}

function sinceWindow(minutes: number): string {
  return new Date(Date.now() - minutes * 60_000).toISOString();
}

/** An issue with this key created in the window, if any. */
export async function findIssue(
  github: GitHub,
  bounds: CallBounds,
  repo: RepoRef,
  key: string,
  windowMinutes: number,
): Promise<GitHubIssue | undefined> {
  const { data } = await call(bounds, () =>
    github.rest.issues.listForRepo({
      owner: repo.owner,
      repo: repo.repo,
      state: 'all',
      sort: 'created',
      direction: 'desc',
      since: sinceWindow(windowMinutes),
      per_page: 100,
      ...requestOptions(bounds),
    }),
  );
  const tag = marker(key);
  return (data as GitHubIssue[]).find((i) => (i.body ?? '').includes(tag));
}

/** A comment with this key on the issue, created in the window, if any. */
export async function findComment(
  github: GitHub,
  bounds: CallBounds,
  repo: RepoRef,
  issue: number,
  key: string,
  windowMinutes: number,
): Promise<{ id: number; html_url: string; created_at: string } | undefined> {
  const { data } = await call(bounds, () =>
    github.rest.issues.listComments({
      owner: repo.owner,
      repo: repo.repo,
      issue_number: issue,
      since: sinceWindow(windowMinutes),
      per_page: 100,
      ...requestOptions(bounds),
    }),
  );
  const tag = marker(key);
  return data.find((c) => (c.body ?? '').includes(tag));
}

/**
 * Posts once: returns what an earlier identical write made (`deduplicated: true`), else posts;
 * when the post fails without an answer, looks again before reporting the failure.
 */
export async function postOnce<T>(
  bounds: CallBounds,
  find: () => Promise<T | undefined>,
  post: () => Promise<T>,
): Promise<{ value: T; deduplicated: boolean }> {
  const earlier = await find();
  if (earlier !== undefined) return { value: earlier, deduplicated: true };
  try {
    return { value: await post(), deduplicated: false };
  } catch (error) {
    if (!bounds.signal.aborted && ambiguous(error)) {
      const made = await find().catch(() => undefined);
      if (made !== undefined) return { value: made, deduplicated: true };
    }
    throw githubError(error, bounds.signal);
  }
}
