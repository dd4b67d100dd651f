import { defineTool, untrusted } from '@gatehouse/core';
import * as z from 'zod';
import type { JiraDeps } from '../deps.js';
import { JIRA_READ } from '../deps.js';
import type { JiraIssue } from '../format.js';
import { keyTarget } from '../format.js';
import {
  IssueViewSchema,
  VIEW_FIELDS,
  adfToMarkdown,
  allowedKey,
  issueLine,
  issueView,
  requireInScope,
} from '../format.js';

const PARTS = ['description', 'comments', 'links', 'subtasks', 'transitions'] as const;

const RelatedSchema = z.object({
  key: z.string(),
  summary: untrusted(z.string()),
  status: untrusted(z.string()),
});

/** The links and sub-tasks of an issue, as Jira returns them (the fields read here). */
interface Related {
  issuelinks?: Array<{
    type?: { inward?: string; outward?: string };
    inwardIssue?: LinkedIssue;
    outwardIssue?: LinkedIssue;
  }>;
  subtasks?: LinkedIssue[];
}
interface LinkedIssue {
  key?: string;
  fields?: { summary?: string; status?: { name?: string } };
}

const CommentSchema = z.object({
  id: z.string(),
  author: untrusted(z.string()).nullable(),
  created: z.string(),
  body: untrusted(z.string()).describe('Markdown'),
});

/** `jira_get_issue`: one issue with its description and a page of comments, as Markdown. */
export function getIssueTool(deps: JiraDeps) {
  const { scope, config } = deps;
  return defineTool({
    name: 'jira_get_issue',
    title: 'Get an issue',
    description:
      'One issue: its fields, the description and a page of comments (oldest first) as Markdown, its links and sub-tasks within these projects, and the transitions it can take now.',
    access: 'read',
    annotations: JIRA_READ,
    input: z.strictObject({
      key: z.string().min(3).max(32).describe('The issue key, e.g. OPS-12.'),
      comments: z
        .number()
        .int()
        .min(0)
        .max(100)
        .optional()
        .describe('Comments to include (default 20; 0 for none).'),
      comments_start: z
        .number()
        .int()
        .min(0)
        .optional()
        .describe('Skip this many comments (paging).'),
      include: z
        .array(z.enum(PARTS))
        .max(PARTS.length)
        .optional()
        .describe(
          `Which parts to return besides the issue's fields (default all: ${PARTS.join(', ')}); fewer parts, fewer requests and bytes.`,
        ),
    }),
    output: z.object({
      issue: IssueViewSchema,
      description: untrusted(z.string()).describe('Markdown'),
      comments: z.array(CommentSchema),
      comments_total: z.number().int(),
      links: z.array(RelatedSchema.extend({ relation: untrusted(z.string()) })),
      links_hidden: z
        .number()
        .int()
        .describe('Links to issues outside this server’s projects, not shown'),
      subtasks: z.array(RelatedSchema),
      transitions: z
        .array(untrusted(z.string()))
        .describe('What jira_transition_issue can move it to now'),
    }),
    target: (args) => keyTarget(scope, args.key),
    async handler(args, ctx) {
      const call = await deps.accounts.deps(deps, ctx);
      const key = allowedKey(scope, args.key);
      const parts = new Set(args.include ?? PARTS);
      const issue = (await call.jira.call(ctx, 'read', (api) =>
        api.issues.getIssue({
          issueIdOrKey: key,
          fields: [...VIEW_FIELDS, 'description', 'issuelinks', 'subtasks'],
        }),
      )) as JiraIssue;
      requireInScope(scope, key, issue);
      const wanted = parts.has('comments') ? (args.comments ?? 20) : 0;
      // Comments and transitions in parallel, once the issue is known to be in scope.
      const [page, { transitions = [] }] = await Promise.all([
        wanted === 0
          ? undefined
          : call.jira.call(ctx, 'read', (api) =>
              api.issueComments.getComments({
                issueIdOrKey: issue.key ?? key,
                startAt: args.comments_start ?? 0,
                maxResults: wanted,
              }),
            ),
        parts.has('transitions')
          ? call.jira.call(ctx, 'read', (api) =>
              api.issues.getTransitions({ issueIdOrKey: issue.key ?? key }),
            )
          : { transitions: [] },
      ]);
      const view = issueView(config.JIRA_URL, issue);
      // Links and sub-tasks only within the allowed projects: a summary elsewhere is not ours to show.
      const related = (issue.fields ?? {}) as Related;
      const inScope = (i: LinkedIssue | undefined) =>
        i?.key !== undefined && scope.allows(i.key.split('-')[0] ?? '');
      const brief = (i: LinkedIssue) => ({
        key: i.key ?? '',
        summary: i.fields?.summary ?? '',
        status: i.fields?.status?.name ?? '',
      });
      const allLinks = (related.issuelinks ?? []).map((l) =>
        l.outwardIssue !== undefined
          ? { relation: l.type?.outward ?? 'links to', other: l.outwardIssue }
          : { relation: l.type?.inward ?? 'is linked from', other: l.inwardIssue },
      );
      const links = (parts.has('links') ? allLinks : [])
        .filter((l) => inScope(l.other))
        .map((l) => ({ relation: l.relation, ...brief(l.other!) }));
      const subtasks = parts.has('subtasks')
        ? (related.subtasks ?? []).filter(inScope).map(brief)
        : [];
      const description = parts.has('description') ? adfToMarkdown(issue.fields?.description) : '';
      const comments = (page?.comments ?? []).map((c) => ({
        id: c.id ?? '',
        author: c.author?.displayName ?? null,
        created: c.created === undefined ? '' : new Date(c.created).toISOString(),
        body: adfToMarkdown(c.body),
      }));
      const total = page?.total ?? 0;
      const text = [
        issueLine(view),
        description === '' ? '(no description)' : description,
        ...links.map((l) => `${l.relation} ${l.key} [${l.status}] ${l.summary}`),
        ...subtasks.map((t) => `sub-task ${t.key} [${t.status}] ${t.summary}`),
        ...comments.map((c) => `--- ${c.author ?? 'someone'}, ${c.created}:\n${c.body}`),
      ].join('\n\n');
      return {
        structured: {
          issue: view,
          description,
          comments,
          comments_total: total,
          links,
          links_hidden: parts.has('links') ? allLinks.length - links.length : 0,
          subtasks,
          transitions: transitions.map((t) => t.to?.name ?? t.name ?? '').filter((n) => n !== ''),
        },
        text: `${view.key}: ${comments.length} of ${total} comment(s)\n${ctx.untrusted(text, `Jira issue ${view.key}`)}`,
      };
    },
  });
}
