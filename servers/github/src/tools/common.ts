import type { ToolAnnotations } from '@gatehouse/core';
import * as z from 'zod';
import type { CallBounds } from '../client.js';
import type { Acting } from '../acting.js';
import type { GitHubDeps } from '../deps.js';
import { inScope, safeMarkdown } from '../deps.js';
import type { GitHubIssue, IssueField, IssueView } from '../format.js';
import { ISSUE_FIELDS, IssueFieldSchema, projectIssue, repoOf } from '../format.js';
import { parseRepo } from '../scope.js';

/** Reads of third-party content on GitHub: read-only, open world. */
export const GITHUB_READ: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
};

export const RepoArg = z
  .string()
  .min(3)
  .max(140)
  .describe('Repository (owner/repo) this server allows.');

export const LoginArg = z
  .string()
  .regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/, 'expected a GitHub login')
  .describe('A GitHub login, without @.');

export function fieldsArg(defaults: readonly IssueField[]) {
  return z
    .array(IssueFieldSchema)
    .min(1)
    .max(20)
    .optional()
    .describe(
      `Fields to return${defaults.length === ISSUE_FIELDS.length ? ' (default all)' : ` per issue (default: ${defaults.join(', ')})`}; body is the largest.`,
    );
}

export const PerPageArg = z.number().int().min(1).max(100).optional();
export const CursorArg = z
  .string()
  .max(400)
  .optional()
  .describe('next_cursor of the previous page; omit for the first.');

/**
 * Projects issues for the model: only those in allowed repositories (whatever GitHub
 * returned); titles and bodies with their Markdown made inert; in trusted-authors mode the
 * titles and bodies of authors without push access withheld.
 */
export async function viewIssues(
  deps: GitHubDeps,
  acting: Acting,
  bounds: CallBounds,
  found: readonly GitHubIssue[],
  fields: readonly IssueField[],
): Promise<IssueView[]> {
  const issues = found.filter((i) => inScope(deps, i));
  const hidden = new Set<GitHubIssue>();
  const { trust } = acting;
  if (trust !== undefined) {
    for (const issue of issues) {
      const ref = parseRepo(repoOf(issue));
      const login = issue.user?.login;
      if (
        ref === undefined ||
        login === undefined ||
        !(await trust.trusted(acting.github, bounds, ref, login))
      ) {
        hidden.add(issue);
      }
    }
  }
  return issues.map((i) => {
    const view = projectIssue(i, fields, hidden.has(i));
    if (view.hidden === true) return view;
    if (view.title !== undefined) view.title = safeMarkdown(deps, view.title);
    if (typeof view.body === 'string') view.body = safeMarkdown(deps, view.body);
    return view;
  });
}
