import { PolicyError, ToolError, untrusted } from '@gatehouse/core';
import { TargetScope } from '@gatehouse/core/saas';
import { adfDocumentToMarkdown } from './adf-markdown.js';
import * as z from 'zod';
import type { JiraConfig } from './config.js';

export const ISSUE_KEY = /^([A-Z][A-Z0-9_]{1,19})-([1-9]\d{0,9})$/;

/** The projects the server may touch: JIRA_PROJECTS ∩ the `jira:` allow-list patterns. */
export function projectScope(config: JiraConfig): TargetScope {
  return new TargetScope({
    kind: 'jira',
    variable: 'JIRA_PROJECTS',
    noun: 'project',
    configured: config.JIRA_PROJECTS,
    allowTargets: config.GATEHOUSE_ALLOW_TARGETS,
  });
}

/** A project argument inside the scope, or the refusal (before any request). */
export function allowedProject(scope: TargetScope, key: string): string {
  const upper = key.trim().toUpperCase();
  if (!scope.allows(upper)) {
    throw new PolicyError(
      'jira_project_allow_list',
      `${key} is not one of this server's projects (${scope.describe()}).`,
      {
        code: 'project_not_allowed',
      },
    );
  }
  return upper;
}

/** The policy/audit target of an issue key argument: `jira:OPS#OPS-12`. */
export function keyTarget(scope: TargetScope, key: string): string {
  const upper = key.trim().toUpperCase();
  return scope.target(upper.split('-')[0] ?? '', `#${upper}`);
}

/** An issue key whose project is inside the scope, or the refusal (before any request). */
export function allowedKey(scope: TargetScope, key: string): string {
  const upper = key.trim().toUpperCase();
  const m = ISSUE_KEY.exec(upper);
  if (m === null)
    throw new ToolError(`"${key}" is not an issue key; use PROJECT-123.`, { code: 'invalid_key' });
  allowedProject(scope, m[1]!);
  return upper;
}

/** The project an answer says the issue is in must be in scope too (keys move between projects). */
export function requireInScope(scope: TargetScope, asked: string, issue: JiraIssue): void {
  const project = issue.fields?.project?.key ?? issue.key?.split('-')[0] ?? '';
  if (scope.allows(project)) return;
  throw new PolicyError(
    'jira_project_allow_list',
    // Never the new key: the project it moved to is outside the scope, its name included.
    `${asked} moved out of this server's projects (${scope.describe()}); it cannot be read or changed here.`,
  );
}

/** An issue as jira.js returns it (the fields the server reads). */
export interface JiraIssue {
  key?: string;
  fields?: {
    summary?: string;
    description?: unknown;
    status?: { name?: string; statusCategory?: { name?: string } };
    issuetype?: { name?: string };
    priority?: { name?: string };
    labels?: string[];
    assignee?: { displayName?: string } | null;
    reporter?: { displayName?: string } | null;
    project?: { key?: string };
    created?: string | Date;
    updated?: string | Date;
  } & Record<string, unknown>;
}

export const IssueViewSchema = z.object({
  key: z.string(),
  // What people and admins wrote is framed in either view (docs/security.md); keys, the status
  // category (one of Jira's three), dates and URLs are Jira's or ours.
  summary: untrusted(z.string()),
  status: untrusted(z.string()),
  status_category: z.string(),
  type: untrusted(z.string()),
  priority: untrusted(z.string()).nullable(),
  labels: z.array(untrusted(z.string())),
  assignee: untrusted(z.string()).nullable(),
  reporter: untrusted(z.string()).nullable(),
  created: z.string(),
  updated: z.string(),
  url: z.string(),
});
export type IssueView = z.infer<typeof IssueViewSchema>;

/** The fields a view needs from Jira. */
export const VIEW_FIELDS = [
  'summary',
  'status',
  'issuetype',
  'priority',
  'labels',
  'assignee',
  'reporter',
  'project',
  'created',
  'updated',
];

const iso = (d: string | Date | undefined) => (d === undefined ? '' : new Date(d).toISOString());

export function issueView(site: string, i: JiraIssue): IssueView {
  const f = i.fields ?? {};
  return {
    key: i.key ?? '',
    summary: f.summary ?? '',
    status: f.status?.name ?? '',
    status_category: f.status?.statusCategory?.name ?? '',
    type: f.issuetype?.name ?? '',
    priority: f.priority?.name ?? null,
    labels: f.labels ?? [],
    assignee: f.assignee?.displayName ?? null,
    reporter: f.reporter?.displayName ?? null,
    created: iso(f.created),
    updated: iso(f.updated),
    url: `${site.replace(/\/$/, '')}/browse/${i.key ?? ''}`,
  };
}

export function issueLine(v: IssueView): string {
  return `${v.key} [${v.status}] ${v.summary} (${v.type}${v.priority === null ? '' : `, ${v.priority}`}${v.assignee === null ? ', unassigned' : `, ${v.assignee}`}${v.labels.length === 0 ? '' : `; ${v.labels.join(', ')}`})`;
}

/** ADF as Markdown (what Markdown cannot express is dropped); empty for no document. */
export function adfToMarkdown(doc: unknown): string {
  if (doc === null || doc === undefined) return '';
  try {
    return adfDocumentToMarkdown(doc);
  } catch {
    return '';
  }
}
