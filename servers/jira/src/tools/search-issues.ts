import { ToolError, defineTool } from '@gatehouse/core';
import type { RequestContext } from '@gatehouse/core';
import * as z from 'zod';
import type { JiraCall, JiraDeps } from '../deps.js';
import { JIRA_READ } from '../deps.js';
import type { JiraIssue } from '../format.js';
import { IssueViewSchema, VIEW_FIELDS, allowedProject, issueLine, issueView } from '../format.js';
import { quote, scopeClause, textTerms, writeClause, writeOrderBy } from '../jql.js';
import type { ParsedQuery } from '../jql.js';
import { personJql } from '../people.js';

const ORDER = { updated: 'updated', created: 'created', priority: 'priority', key: 'key' } as const;

/** `jira_search_issues`: structured filters (and optional JQL) confined to the allowed projects. */
export function searchIssuesTool(deps: JiraDeps) {
  const { scope, config } = deps;
  return defineTool({
    name: 'jira_search_issues',
    title: 'Search issues',
    description: `Find issues of this server's projects by filters (people: a name, an e-mail, "me", or "unassigned"), or by jql, a JQL condition the server checks with Jira's parser and confines to these projects (it may not name projects itself). Newest updates first unless order_by says otherwise.`,
    access: 'read',
    annotations: JIRA_READ,
    input: z.strictObject({
      project: z
        .string()
        .max(20)
        .optional()
        .describe('Only this project (key); default all of this server’s.'),
      status: z
        .array(z.string().min(1).max(60))
        .max(10)
        .optional()
        .describe('Any of these statuses (names).'),
      status_category: z
        .enum(['To Do', 'In Progress', 'Done'])
        .optional()
        .describe('Only this status category.'),
      assignee: z
        .string()
        .min(1)
        .max(120)
        .optional()
        .describe('A name, e-mail, "me" or "unassigned".'),
      reporter: z.string().min(1).max(120).optional().describe('A name, e-mail or "me".'),
      labels: z
        .array(z.string().min(1).max(100))
        .max(10)
        .optional()
        .describe('Any of these labels.'),
      type: z.string().min(1).max(60).optional().describe('Issue type name (Bug, Task…).'),
      priority: z
        .array(z.string().min(1).max(60))
        .max(5)
        .optional()
        .describe('Any of these priorities.'),
      updated_since: z.iso
        .date()
        .optional()
        .describe('Updated on or after this date (YYYY-MM-DD).'),
      created_since: z.iso
        .date()
        .optional()
        .describe('Created on or after this date (YYYY-MM-DD).'),
      text: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('Words in the summary, description or comments.'),
      jql: z
        .string()
        .min(1)
        .max(2_000)
        .optional()
        .describe('An extra JQL condition (and ORDER BY), checked and confined to these projects.'),
      order_by: z
        .enum(['updated', 'created', 'priority', 'key'])
        .optional()
        .describe('Sort field (default updated).'),
      direction: z.enum(['asc', 'desc']).optional().describe('Sort direction (default desc).'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(100)
        .optional()
        .describe("Issues per page (default: the server's page size)."),
      cursor: z
        .string()
        .max(2_000)
        .optional()
        .describe('next_cursor of the previous page, to continue (same filters).'),
    }),
    output: z.object({
      issues: z.array(IssueViewSchema),
      next_cursor: z.string().optional(),
      jql: z.string().describe('The query the server sent to Jira'),
    }),
    target: (args) =>
      args.project === undefined
        ? scope.targets()
        : scope.target(args.project.trim().toUpperCase()),
    async handler(args, ctx) {
      const call = await deps.accounts.deps(deps, ctx);
      const projects =
        args.project === undefined ? [...scope.names] : [allowedProject(scope, args.project)];
      const jql = await searchJql(call, ctx, args, projects);
      const cursor = decodeCursor(args.cursor, jql);
      const page = await call.jira.call(ctx, 'read', (api) =>
        api.issueSearch.searchAndReconsileIssuesUsingJqlPost({
          jql,
          fields: VIEW_FIELDS,
          maxResults: args.limit ?? config.JIRA_PAGE_SIZE,
          ...(cursor === undefined ? {} : { nextPageToken: cursor }),
        }),
      );
      // Whatever Jira answers, only issues of this server's projects are shown.
      const issues = ((page.issues ?? []) as JiraIssue[])
        .filter((i) => scope.allows(i.fields?.project?.key ?? i.key?.split('-')[0] ?? ''))
        .map((i) => issueView(config.JIRA_URL, i));
      const next =
        page.isLast === false && page.nextPageToken
          ? encodeCursor(page.nextPageToken, jql)
          : undefined;
      return {
        structured: { issues, ...(next === undefined ? {} : { next_cursor: next }), jql },
        text: `${issues.length} issue(s)${next === undefined ? '' : ' (more: pass next_cursor)'}\n${ctx.untrusted(issues.map(issueLine).join('\n') || '(none)', 'Jira issues')}`,
      };
    },
  });
}

/** The filters of a search, as the tool takes them. */
interface Filters {
  readonly status?: readonly string[] | undefined;
  readonly status_category?: string | undefined;
  readonly assignee?: string | undefined;
  readonly reporter?: string | undefined;
  readonly labels?: readonly string[] | undefined;
  readonly type?: string | undefined;
  readonly priority?: readonly string[] | undefined;
  readonly updated_since?: string | undefined;
  readonly created_since?: string | undefined;
  readonly text?: string | undefined;
  readonly jql?: string | undefined;
  readonly order_by?: keyof typeof ORDER | undefined;
  readonly direction?: 'asc' | 'desc' | undefined;
}

/**
 * The JQL of a search: the filters as clauses, confined to `projects`; the caller's own JQL
 * parsed by Jira (strict) and written back clause by clause, never passed on as text.
 */
async function searchJql(
  { jira }: JiraCall,
  ctx: RequestContext,
  args: Filters,
  projects: readonly string[],
): Promise<string> {
  const where: string[] = [scopeClause(projects)];
  if (args.status !== undefined) where.push(`status IN (${args.status.map(quote).join(', ')})`);
  if (args.status_category !== undefined)
    where.push(`statusCategory = ${quote(args.status_category)}`);
  if (args.assignee !== undefined) {
    const who = await personJql(jira, ctx, args.assignee, 'assignee', projects);
    where.push(who === 'EMPTY' ? 'assignee IS EMPTY' : `assignee = ${who}`);
  }
  if (args.reporter !== undefined)
    where.push(`reporter = ${await personJql(jira, ctx, args.reporter, 'reporter', projects)}`);
  if (args.labels !== undefined) where.push(`labels IN (${args.labels.map(quote).join(', ')})`);
  if (args.type !== undefined) where.push(`issuetype = ${quote(args.type)}`);
  if (args.priority !== undefined)
    where.push(`priority IN (${args.priority.map(quote).join(', ')})`);
  if (args.updated_since !== undefined) where.push(`updated >= ${quote(args.updated_since)}`);
  if (args.created_since !== undefined) where.push(`created >= ${quote(args.created_since)}`);
  if (args.text !== undefined) where.push(`text ~ ${textTerms(args.text)}`);
  let order =
    args.order_by === undefined
      ? ''
      : ` ORDER BY ${ORDER[args.order_by]} ${args.direction === 'asc' ? 'ASC' : 'DESC'}`;
  const own = args.jql;
  if (own !== undefined) {
    // Jira's parser, strict: the model's JQL as a tree, written back clause by clause.
    const parsed = await jira.call(ctx, 'read', (api) =>
      api.jql.parseJqlQueries({ validation: 'strict', queries: [own] }),
    );
    const query = parsed.queries[0];
    if (query === undefined || (query.errors ?? []).length > 0 || query.structure === undefined) {
      throw new ToolError(
        `Jira refused the JQL: ${(query?.errors ?? ['it could not be parsed']).join('; ')}`,
        { code: 'invalid_jql' },
      );
    }
    const structure = query.structure as ParsedQuery;
    if (structure.where !== undefined) where.push(`(${writeClause(structure.where, projects)})`);
    if (order === '') order = writeOrderBy(structure.orderBy);
  }
  return `${where.join(' AND ')}${order === '' ? ' ORDER BY updated DESC' : order}`;
}

/** A page token bound to its query: replayed with other filters, it is refused. */
function encodeCursor(token: string, jql: string): string {
  return Buffer.from(JSON.stringify({ t: token, q: jql })).toString('base64url');
}

function decodeCursor(cursor: string | undefined, jql: string): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const { t, q } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      t?: unknown;
      q?: unknown;
    };
    if (typeof t === 'string' && q === jql) return t;
  } catch {
    // not ours
  }
  throw new ToolError(
    'The cursor belongs to another search (or is damaged); search again without it.',
    { code: 'invalid_cursor' },
  );
}
