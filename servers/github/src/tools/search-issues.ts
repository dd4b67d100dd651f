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
import { buildSearchQuery } from '../search-query.js';
import {
  CursorArg,
  GITHUB_READ,
  LoginArg,
  PerPageArg,
  RepoArg,
  fieldsArg,
  viewIssues,
} from './common.js';

const DateArg = z.iso.date().describe('A date, YYYY-MM-DD.');

/** `github_search_issues`: GitHub issue search, always confined to the allowed repositories. */
export function searchIssuesTool(deps: GitHubDeps) {
  const { scope, config } = deps;
  return defineTool({
    name: 'github_search_issues',
    title: 'Search issues',
    description: `Search issues (or pull requests) of this server's repositories by words and filters, to find issues by topic or duplicates. Words are plain terms, not search syntax.`,
    access: 'read',
    toolset: 'issues',
    annotations: GITHUB_READ,
    input: z.strictObject({
      text: z.string().max(256).optional().describe('Words in titles and bodies.'),
      repo: RepoArg.optional().describe('Only this repository (owner/repo).'),
      state: z.enum(['open', 'closed']).optional().describe('Default both.'),
      type: z.enum(['issue', 'pr']).optional().describe('Default issue.'),
      labels: z
        .array(z.string().min(1).max(50))
        .max(10)
        .optional()
        .describe('All of these labels.'),
      exclude_labels: z
        .array(z.string().min(1).max(50))
        .max(10)
        .optional()
        .describe('None of these labels.'),
      author: LoginArg.optional().describe('Opened by this GitHub login.'),
      assignee: LoginArg.optional().describe('Assigned to this GitHub login.'),
      mentions: LoginArg.optional().describe('Mentioning this GitHub login.'),
      milestone: z.string().min(1).max(100).optional().describe('Milestone title.'),
      no: z
        .array(z.enum(['label', 'assignee', 'milestone']))
        .max(3)
        .optional()
        .describe('Without a label, assignee or milestone.'),
      created_after: DateArg.optional().describe('Created on or after this date.'),
      updated_after: DateArg.optional().describe('Updated on or after this date.'),
      sort: z.enum(['created', 'updated', 'comments']).optional().describe('Default: best match.'),
      order: z.enum(['asc', 'desc']).optional().describe('Default desc.'),
      per_page: PerPageArg.describe("Per page (default: the server's page size)."),
      cursor: CursorArg,
      fields: fieldsArg(['repo', ...LIST_FIELDS]),
    }),
    output: z.object({
      query: z.string().describe('The query sent to GitHub'),
      total_count: z.number().int(),
      items: z.array(IssueViewSchema),
      next_cursor: z.string().optional(),
      outside_scope_dropped: z.number().int().describe('Results from other repositories, removed'),
    }),
    target: (args) => (args.repo === undefined ? scope.targets() : repoTarget(args.repo)),
    async handler(args, ctx) {
      const repo = args.repo === undefined ? undefined : allowedRepo(deps, args.repo);
      const acting = await deps.accounts.for(ctx);
      const q = buildSearchQuery(scope, args, repo);
      const query = { q, sort: args.sort, order: args.order, per_page: args.per_page };
      const page = decodeCursor(args.cursor, query);
      const perPage = args.per_page ?? config.GITHUB_PAGE_SIZE;
      const response = await call(ctx, () =>
        acting.github.rest.search.issuesAndPullRequests({
          q,
          ...(args.sort === undefined ? {} : { sort: args.sort }),
          ...(args.order === undefined ? {} : { order: args.order }),
          per_page: perPage,
          page,
          ...requestOptions(ctx),
        }),
      );
      // Defence in depth: whatever GitHub returns, only allowed repositories reach the model
      // (viewIssues drops the others).
      const items = issuesOf(response.data.items);
      const fields = args.fields ?? ['repo', ...LIST_FIELDS];
      const views = await viewIssues(deps, acting, ctx, items, fields);
      const next =
        hasNext(response.headers.link) && page < 1000 / perPage
          ? encodeCursor(page + 1, query)
          : undefined;
      const structured = {
        query: q,
        total_count: response.data.total_count,
        items: views,
        ...(next === undefined ? {} : { next_cursor: next }),
        outside_scope_dropped: items.length - views.length,
      };
      const head = `${views.length} of ${response.data.total_count} result(s) for: ${q}${next === undefined ? '' : ' (more: pass next_cursor)'}`;
      return {
        structured,
        text: `${head}\n${ctx.untrusted(views.map(issueLine).join('\n') || '(none)', 'GitHub issues')}`,
      };
    },
  });
}
