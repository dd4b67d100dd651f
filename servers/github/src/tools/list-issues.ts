import { defineTool } from '@gatehouse/core';
import * as z from 'zod';
import { call, requestOptions } from '../client.js';
import type { GitHubDeps } from '../deps.js';
import { allowedRepo, repoTarget } from '../deps.js';
import { issuesOf } from '../format.js';
import {
  IssueViewSchema,
  LIST_FIELDS,
  decodeCursor,
  encodeCursor,
  hasNext,
  issueLine,
} from '../format.js';
import {
  CursorArg,
  GITHUB_READ,
  LoginArg,
  PerPageArg,
  RepoArg,
  fieldsArg,
  viewIssues,
} from './common.js';

/** `github_list_issues`: one repository's issues by state, labels, people and time. */
export function listIssuesTool(deps: GitHubDeps) {
  const { config } = deps;
  return defineTool({
    name: 'github_list_issues',
    title: 'List issues',
    description: `One repository's issues (no pull requests), newest first by default.`,
    access: 'read',
    toolset: 'issues',
    annotations: GITHUB_READ,
    input: z.strictObject({
      repo: RepoArg,
      state: z.enum(['open', 'closed', 'all']).optional().describe('Default open.'),
      labels: z
        .array(z.string().min(1).max(50))
        .max(10)
        .optional()
        .describe('All of these labels.'),
      assignee: z
        .union([LoginArg, z.enum(['none', '*'])])
        .optional()
        .describe('A login, none, or * (any).'),
      creator: LoginArg.optional(),
      mentioned: LoginArg.optional(),
      milestone: z
        .union([z.number().int().positive(), z.enum(['none', '*'])])
        .optional()
        .describe('Milestone number, none, or * (any).'),
      since: z.iso.datetime().optional().describe('Updated at or after this time.'),
      sort: z.enum(['created', 'updated', 'comments']).optional().describe('Default created.'),
      direction: z.enum(['asc', 'desc']).optional().describe('Default desc.'),
      per_page: PerPageArg.describe("Per page (default: the server's page size)."),
      cursor: CursorArg,
      fields: fieldsArg(LIST_FIELDS),
    }),
    output: z.object({
      repo: z.string(),
      items: z.array(IssueViewSchema),
      next_cursor: z.string().optional(),
      pull_requests_skipped: z.number().int(),
    }),
    target: (args) => repoTarget(args.repo),
    async handler(args, ctx) {
      const repo = allowedRepo(deps, args.repo);
      const acting = await deps.accounts.for(ctx);
      const { cursor: _cursor, fields: _fields, ...query } = args;
      const page = decodeCursor(args.cursor, query);
      const perPage = args.per_page ?? config.GITHUB_PAGE_SIZE;
      const response = await call(ctx, () =>
        acting.github.rest.issues.listForRepo({
          owner: repo.owner,
          repo: repo.repo,
          ...(args.state === undefined ? {} : { state: args.state }),
          ...(args.labels === undefined ? {} : { labels: args.labels.join(',') }),
          ...(args.assignee === undefined ? {} : { assignee: args.assignee }),
          ...(args.creator === undefined ? {} : { creator: args.creator }),
          ...(args.mentioned === undefined ? {} : { mentioned: args.mentioned }),
          ...(args.milestone === undefined ? {} : { milestone: String(args.milestone) }),
          ...(args.since === undefined ? {} : { since: args.since }),
          ...(args.sort === undefined ? {} : { sort: args.sort }),
          ...(args.direction === undefined ? {} : { direction: args.direction }),
          per_page: perPage,
          page,
          ...requestOptions(ctx),
        }),
      );
      const all = issuesOf(response.data);
      const issues = all.filter((i) => i.pull_request === undefined);
      const views = await viewIssues(deps, acting, ctx, issues, args.fields ?? LIST_FIELDS);
      const next = hasNext(response.headers.link) ? encodeCursor(page + 1, query) : undefined;
      const name = `${repo.owner}/${repo.repo}`;
      return {
        structured: {
          repo: name,
          items: views,
          ...(next === undefined ? {} : { next_cursor: next }),
          pull_requests_skipped: all.length - issues.length,
        },
        text: `${views.length} issue(s) in ${name}${next === undefined ? '' : ' (more: pass next_cursor)'}\n${ctx.untrusted(views.map(issueLine).join('\n') || '(none)', `GitHub issues of ${name}`)}`,
      };
    },
  });
}
