import { createHash } from 'node:crypto';
import { ToolError, UpstreamError, untrusted } from '@gatehouse/core';
import * as z from 'zod';

/** The parts of a GitHub issue the server reads, checked where an answer comes in. */
const GitHubIssueSchema = z.object({
  number: z.number().int(),
  title: z.string(),
  body: z.string().nullish(),
  state: z.string(),
  state_reason: z.string().nullish(),
  labels: z.array(z.union([z.string(), z.object({ name: z.string().optional() })])),
  assignees: z.array(z.object({ login: z.string() })).nullish(),
  user: z.object({ login: z.string() }).nullable(),
  comments: z.number().int(),
  milestone: z.object({ title: z.string() }).nullish(),
  created_at: z.string(),
  updated_at: z.string(),
  closed_at: z.string().nullable(),
  html_url: z.string(),
  repository_url: z.string(),
  pull_request: z.unknown().optional(),
});
export type GitHubIssue = z.output<typeof GitHubIssueSchema>;
const GitHubIssuesSchema = z.array(GitHubIssueSchema);

/**
 * Issues from a GitHub answer, checked once (never cast): an answer of another shape is GitHub's
 * failure, said as one — not a crash deep in a formatter.
 */
export function issuesOf(data: unknown): GitHubIssue[] {
  const parsed = GitHubIssuesSchema.safeParse(data);
  if (parsed.success) return parsed.data;
  const where = parsed.error.issues[0]?.path.join('.') ?? '';
  throw new UpstreamError({
    service: 'GitHub',
    status: 502,
    message: `an issue in its answer is not what GitHub documents (${where || 'the answer'})`,
    shown: true,
  });
}

/** One issue from a GitHub answer, checked ({@link issuesOf}). */
export const issueOf = (data: unknown): GitHubIssue => issuesOf([data])[0]!;

/** Fields the model can ask for; lists default to a compact set without bodies. */
export const ISSUE_FIELDS = [
  'repo',
  'number',
  'title',
  'state',
  'state_reason',
  'labels',
  'assignees',
  'author',
  'comments',
  'milestone',
  'created_at',
  'updated_at',
  'closed_at',
  'url',
  'body',
] as const;
export type IssueField = (typeof ISSUE_FIELDS)[number];
export const IssueFieldSchema = z.enum(ISSUE_FIELDS);

export const LIST_FIELDS: readonly IssueField[] = [
  'number',
  'title',
  'state',
  'labels',
  'assignees',
  'author',
  'comments',
  'updated_at',
];
export const DETAIL_FIELDS: readonly IssueField[] = ISSUE_FIELDS;

/** One issue as the model sees it: only the requested fields (plus `hidden` when filtered). */
export const IssueViewSchema = z
  .object({
    repo: z.string(),
    number: z.number().int(),
    // What GitHub users wrote is framed in either view (docs/security.md); logins are of the
    // closed set GitHub documents (loginOf), the rest is GitHub's or ours.
    title: untrusted(z.string()),
    state: z.string(),
    state_reason: z.string().nullable(),
    labels: z.array(untrusted(z.string())),
    assignees: z.array(z.string()),
    author: z.string().nullable(),
    comments: z.number().int(),
    milestone: untrusted(z.string()).nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    closed_at: z.string().nullable(),
    url: z.string(),
    body: untrusted(z.string()).nullable(),
    hidden: z
      .literal(true)
      .describe(
        'Title and body were withheld: the author has no push access (trusted-authors mode)',
      ),
  })
  .partial();
export type IssueView = z.infer<typeof IssueViewSchema>;

/**
 * GitHub's documented login: letters, digits and single hyphens, not at either end, at most 39
 * characters (an app's bot adds `[bot]`). Logins are shown outside the frames (`by @alice`), so
 * one that is not of that form is not GitHub's and is shown as `unknown`.
 */
const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}(?:\[bot\])?$/;

/** A login as shown: GitHub's form, or null. */
export function loginOf(login: string | null | undefined): string | null {
  return login !== null && login !== undefined && LOGIN.test(login) ? login : null;
}

/** `owner/repo` of an issue, from its repository_url. */
export function repoOf(issue: GitHubIssue): string {
  return issue.repository_url.split('/repos/')[1] ?? '';
}

/** The placeholder of withheld content. */
export function withheld(login: string | null, repo: string): string {
  return `[hidden: @${login ?? 'unknown'} has no push access to ${repo} (trusted-authors mode)]`;
}

/** Projects an issue onto the requested fields. */
export function projectIssue(
  issue: GitHubIssue,
  fields: readonly IssueField[],
  hidden = false,
): IssueView {
  const repo = repoOf(issue);
  const author = loginOf(issue.user?.login);
  const all: Required<Omit<IssueView, 'hidden'>> = {
    repo,
    number: issue.number,
    title: hidden ? withheld(author, repo) : issue.title,
    state: issue.state,
    state_reason: issue.state_reason ?? null,
    labels: issue.labels.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))),
    assignees: (issue.assignees ?? []).flatMap((a) => loginOf(a.login) ?? []),
    author,
    comments: issue.comments,
    milestone: issue.milestone?.title ?? null,
    created_at: issue.created_at,
    updated_at: issue.updated_at,
    closed_at: issue.closed_at,
    url: issue.html_url,
    body: hidden ? withheld(author, repo) : (issue.body ?? null),
  };
  const view: IssueView = {};
  for (const f of fields) (view as Record<string, unknown>)[f] = all[f];
  if (hidden) view.hidden = true;
  return view;
}

/** One line per issue for the text form: `#12 [open] Title — bug, p1 · @alice → @bob · 3 comments`. */
export function issueLine(v: IssueView): string {
  const parts = [
    `${v.repo === undefined ? '' : v.repo}#${v.number ?? '?'}`,
    v.state === undefined ? '' : `[${v.state}${v.state_reason ? `: ${v.state_reason}` : ''}]`,
    v.title ?? '',
  ].filter((p) => p !== '');
  const meta = [
    v.labels !== undefined && v.labels.length > 0 ? v.labels.join(', ') : '',
    v.author === undefined ? '' : `by @${v.author ?? '?'}`,
    v.assignees !== undefined && v.assignees.length > 0
      ? `assigned @${v.assignees.join(', @')}`
      : '',
    v.milestone ? `milestone ${v.milestone}` : '',
    v.comments === undefined ? '' : `${v.comments} comment${v.comments === 1 ? '' : 's'}`,
    v.updated_at === undefined ? '' : `updated ${v.updated_at.slice(0, 10)}`,
    v.created_at === undefined ? '' : `created ${v.created_at.slice(0, 10)}`,
    v.closed_at ? `closed ${v.closed_at.slice(0, 10)}` : '',
    v.url ?? '',
  ].filter((p) => p !== '');
  const body = v.body === undefined || v.body === null ? '' : `\n${v.body}`;
  return `${parts.join(' ')}${meta.length > 0 ? ` — ${meta.join(' · ')}` : ''}${body}`;
}

/**
 * Opaque page cursors bound to the query they came from: the page number and a hash of the
 * query, so a cursor replayed with other filters is refused rather than silently misapplied.
 */
export function encodeCursor(page: number, query: unknown): string {
  return Buffer.from(JSON.stringify({ p: page, q: queryHash(query) })).toString('base64url');
}

export function decodeCursor(cursor: string | undefined, query: unknown): number {
  if (cursor === undefined) return 1;
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      p?: unknown;
      q?: unknown;
    };
    if (
      Number.isInteger(value.p) &&
      (value.p as number) > 1 &&
      (value.p as number) <= 1000 &&
      value.q === queryHash(query)
    ) {
      return value.p as number;
    }
  } catch {
    // fall through
  }
  throw new ToolError(
    'Invalid cursor: pass next_cursor from the previous page unchanged, with the same filters.',
    { code: 'invalid_cursor' },
  );
}

function queryHash(query: unknown): string {
  return createHash('sha256').update(JSON.stringify(query)).digest('base64url').slice(0, 12);
}

/** Whether a Link header announces a next page. */
export function hasNext(link: string | undefined): boolean {
  return link !== undefined && /rel="next"/.test(link);
}
