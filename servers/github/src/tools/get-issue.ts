import { defineTool, untrusted } from '@gatehouse/core';
import * as z from 'zod';
import { call, requestOptions } from '../client.js';
import type { GitHubDeps } from '../deps.js';
import { allowedRepo, repoTarget, requireInScope, safeMarkdown } from '../deps.js';
import { issueOf } from '../format.js';
import { parseRepo } from '../scope.js';
import {
  DETAIL_FIELDS,
  IssueViewSchema,
  decodeCursor,
  encodeCursor,
  hasNext,
  issueLine,
  loginOf,
  repoOf,
  withheld,
} from '../format.js';
import { CursorArg, GITHUB_READ, PerPageArg, RepoArg, fieldsArg, viewIssues } from './common.js';

const CommentSchema = z.object({
  id: z.number().int(),
  author: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  body: untrusted(z.string()),
  hidden: z.literal(true).optional(),
});

/** `github_get_issue`: one issue with a page of its comments. */
export function getIssueTool(deps: GitHubDeps) {
  const { config } = deps;
  return defineTool({
    name: 'github_get_issue',
    title: 'Get an issue',
    description: 'One issue and a page of its comments, oldest first.',
    access: 'read',
    toolset: 'issues',
    annotations: GITHUB_READ,
    input: z.strictObject({
      repo: RepoArg,
      number: z.number().int().positive().describe('The issue number.'),
      comments: z.boolean().optional().describe('Include comments (default true).'),
      comments_per_page: PerPageArg.describe(
        "Comments per page (default: the server's page size).",
      ),
      comments_cursor: CursorArg,
      fields: fieldsArg(DETAIL_FIELDS),
    }),
    output: z.object({
      issue: IssueViewSchema,
      comments: z.array(CommentSchema),
      comments_total: z.number().int(),
      next_comments_cursor: z.string().optional(),
      comments_hidden: z.number().int().describe('Comments withheld in trusted-authors mode'),
    }),
    target: (args) => repoTarget(args.repo, args.number),
    async handler(args, ctx) {
      const repo = allowedRepo(deps, args.repo);
      const acting = await deps.accounts.for(ctx);
      const name = `${repo.owner}/${repo.repo}`;
      const wantComments = args.comments !== false;
      const query = { repo: name, number: args.number, per_page: args.comments_per_page };
      const page = decodeCursor(args.comments_cursor, query);
      // The issue and its first comments page are fetched at once (one round trip of latency).
      const listComments = (owner: string, name_: string, number: number) =>
        call(ctx, () =>
          acting.github.rest.issues.listComments({
            owner,
            repo: name_,
            issue_number: number,
            per_page: args.comments_per_page ?? config.GITHUB_PAGE_SIZE,
            page,
            ...requestOptions(ctx),
          }),
        );
      const [issueResult, commentsResult] = await Promise.allSettled([
        call(ctx, () =>
          acting.github.rest.issues.get({
            owner: repo.owner,
            repo: repo.repo,
            issue_number: args.number,
            ...requestOptions(ctx),
          }),
        ),
        wantComments ? listComments(repo.owner, repo.repo, args.number) : undefined,
      ]);
      if (issueResult.status === 'rejected') throw issueResult.reason;
      const issue = issueOf(issueResult.value.data);
      // A transferred issue answers from where it lives now: that must be allowed too.
      requireInScope(deps, issue, `${name}#${args.number}`);
      const now = parseRepo(repoOf(issue)) ?? repo;
      const moved =
        `${now.owner}/${now.repo}`.toLowerCase() !== name.toLowerCase() ||
        issue.number !== args.number;
      let commentsResponse =
        commentsResult.status === 'fulfilled' ? commentsResult.value : undefined;
      if (wantComments && moved) {
        commentsResponse = await listComments(now.owner, now.repo, issue.number);
      } else if (commentsResult.status === 'rejected') {
        throw commentsResult.reason;
      }
      const [view] = await viewIssues(deps, acting, ctx, [issue], args.fields ?? DETAIL_FIELDS);
      const comments: Array<z.infer<typeof CommentSchema>> = [];
      let next: string | undefined;
      let hiddenCount = 0;
      if (commentsResponse !== undefined) {
        const response = commentsResponse;
        const trust =
          acting.trust === undefined
            ? undefined
            : await acting.trust.map(
                acting.github,
                ctx,
                now,
                response.data.map((c) => c.user?.login ?? ''),
              );
        for (const c of response.data) {
          const author = loginOf(c.user?.login);
          const hidden = trust !== undefined && trust.get(author ?? '') !== true;
          if (hidden) hiddenCount++;
          comments.push({
            id: c.id,
            author,
            created_at: c.created_at,
            updated_at: c.updated_at,
            body: hidden ? withheld(author, name) : safeMarkdown(deps, c.body ?? ''),
            ...(hidden ? { hidden: true as const } : {}),
          });
        }
        if (hasNext(response.headers.link)) next = encodeCursor(page + 1, query);
      }
      const text = [
        issueLine(view!),
        ...comments.map((c) => `\n— @${c.author ?? '?'} ${c.created_at.slice(0, 10)}:\n${c.body}`),
      ].join('\n');
      return {
        structured: {
          issue: view!,
          comments,
          comments_total: issue.comments,
          ...(next === undefined ? {} : { next_comments_cursor: next }),
          comments_hidden: hiddenCount,
        },
        text: `${name}#${args.number}, ${comments.length} of ${issue.comments} comment(s)${next === undefined ? '' : ' (more: pass comments_cursor)'}\n${ctx.untrusted(text, `GitHub issue ${name}#${args.number}`)}`,
      };
    },
  });
}
