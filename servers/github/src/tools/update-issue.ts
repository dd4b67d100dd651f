import { ToolError, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import { call, requestOptions } from '../client.js';
import type { GitHubDeps } from '../deps.js';
import { allowedRepo, repoTarget } from '../deps.js';
import { issueOf } from '../format.js';
import { IssueViewSchema, projectIssue } from '../format.js';
import { LoginArg, RepoArg } from './common.js';

/** `github_update_issue`: change an issue's title, body, state, labels, assignees or milestone. */
export function updateIssueTool(deps: GitHubDeps) {
  return defineTool({
    name: 'github_update_issue',
    title: 'Update an issue',
    description:
      'Change an issue; only the fields given change. To close as a duplicate: state closed, state_reason duplicate.',
    access: 'write',
    toolset: 'issues',
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: true,
    },
    auditArgs: 'redacted',
    input: z.strictObject({
      repo: RepoArg,
      number: z.number().int().positive().describe('The issue number.'),
      title: z.string().trim().min(1).max(256).optional().describe('The new title.'),
      body: z.string().max(60_000).optional().describe('Replaces the whole body.'),
      state: z.enum(['open', 'closed']).optional().describe('Close or reopen the issue.'),
      state_reason: z
        .enum(['completed', 'not_planned', 'duplicate', 'reopened'])
        .optional()
        .describe('Why it was closed (or reopened).'),
      labels: z
        .array(z.string().min(1).max(50))
        .max(20)
        .optional()
        .describe('Replaces all labels.'),
      add_labels: z
        .array(z.string().min(1).max(50))
        .max(20)
        .optional()
        .describe('Labels to add, keeping the others.'),
      remove_labels: z
        .array(z.string().min(1).max(50))
        .max(20)
        .optional()
        .describe('Labels to remove, keeping the others.'),
      assignees: z.array(LoginArg).max(10).optional().describe('Replaces all assignees.'),
      milestone: z
        .union([z.number().int().positive(), z.null()])
        .optional()
        .describe('Milestone number, or null to clear it.'),
    }),
    output: z.object({ issue: IssueViewSchema, changed: z.array(z.string()) }),
    target: (args) => repoTarget(args.repo, args.number),
    async handler(args, ctx) {
      const repo = allowedRepo(deps, args.repo);
      const acting = await deps.accounts.for(ctx);
      const { repo: _r, number, add_labels, remove_labels, ...direct } = args;
      if (args.labels !== undefined && (add_labels !== undefined || remove_labels !== undefined)) {
        throw new ToolError('Give labels (replace all) or add_labels/remove_labels, not both.', {
          code: 'invalid_arguments',
        });
      }
      const patch: Record<string, unknown> = { ...direct };
      if (add_labels !== undefined || remove_labels !== undefined) {
        const { data } = await call(ctx, () =>
          acting.github.rest.issues.get({
            owner: repo.owner,
            repo: repo.repo,
            issue_number: number,
            ...requestOptions(ctx),
          }),
        );
        const current = issueOf(data).labels.map((l) =>
          typeof l === 'string' ? l : (l.name ?? ''),
        );
        patch.labels = [...new Set([...current, ...(add_labels ?? [])])].filter(
          (l) => !(remove_labels ?? []).includes(l),
        );
      }
      const changed = Object.keys(patch);
      if (changed.length === 0) {
        throw new ToolError('Nothing to change: give at least one field.', {
          code: 'invalid_arguments',
        });
      }
      if (ctx.dryRun) {
        return ctx.preview(
          {
            method: 'PATCH',
            path: `/repos/${repo.owner}/${repo.repo}/issues/${number}`,
            body: patch,
          },
          `would change ${changed.join(', ')} of ${repo.owner}/${repo.repo}#${number}`,
        );
      }
      // A PATCH sets fields to given values: repeating it is harmless, so retries are allowed.
      const { data } = await call(ctx, () =>
        acting.github.rest.issues.update({
          owner: repo.owner,
          repo: repo.repo,
          issue_number: number,
          ...patch,
          ...requestOptions(ctx),
        }),
      );
      const view = projectIssue(data, [
        'repo',
        'number',
        'title',
        'state',
        'state_reason',
        'labels',
        'assignees',
        'milestone',
        'url',
      ]);
      return {
        structured: { issue: view, changed },
        text: `Updated ${view.repo}#${view.number} (${changed.join(', ')}): ${view.url}`,
      };
    },
  });
}
