import { postOnce as kitPostOnce } from '@gatehouse/core/saas';
import type { PostOutcome } from '@gatehouse/core/saas';
import type { CallBounds, GitHub } from './client.js';
import { call, githubError, requestOptions } from './client.js';
import { issuesOf } from './format.js';
import type { GitHubIssue } from './format.js';
import type { RepoRef } from './scope.js';

/**
 * GitHub's part of the kit's idempotent writes (`postOnce` of `@gatehouse/core/saas`): the key
 * travels as an HTML comment in the body (`<!-- gatehouse:3f2a… -->`, invisible when rendered)
 * and is found by listing the issues or comments created in the dedupe window. Search is not
 * used: its index lags; listing by recency is consistent.
 */

export { dedupeKey } from '@gatehouse/core/saas';

export function marker(key: string): string {
  return `<!-- gatehouse:${key} -->`;
}

export function withMarker(body: string, key: string): string {
  return `${body}${body === '' ? '' : '\n\n'}${marker(key)}`;
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
  return issuesOf(data).find((i) => (i.body ?? '').includes(tag));
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

/** The kit's content-keyed write, with GitHub's failures as the model sees them. */
export function postOnce<T>(
  bounds: CallBounds,
  find: () => Promise<T | undefined>,
  post: () => Promise<T>,
): Promise<PostOutcome<T>> {
  return kitPostOnce(bounds.signal, find, post, {
    mapError: (error) => githubError(error, bounds.signal),
  });
}
