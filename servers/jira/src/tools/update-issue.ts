import { ToolError, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { JiraDeps } from '../deps.js';
import { issueView, keyTarget } from '../format.js';
import { markdownToAdf } from '../markdown.js';
import { accountIdOf } from '../people.js';
import { JIRA_WRITE, writeCall, writableIssue } from '../writes.js';
import { KeyArg, PersonArg, PriorityArg } from './write-common.js';

/** `jira_update_issue` (write): only the fields given change. */
export function updateIssueTool(deps: JiraDeps) {
  const { scope, config } = deps;
  return defineTool({
    name: 'jira_update_issue',
    title: 'Update an issue',
    description: 'Change an issue; only the fields given change.',
    access: 'write',
    annotations: { ...JIRA_WRITE, idempotentHint: true },
    auditArgs: 'redacted',
    input: z.strictObject({
      key: KeyArg,
      summary: z.string().trim().min(1).max(255).optional().describe('The new summary.'),
      description: z
        .string()
        .max(32_000)
        .optional()
        .describe('Replaces the description (Markdown).'),
      priority: PriorityArg,
      add_labels: z
        .array(z.string().min(1).max(100).regex(/^\S+$/))
        .max(10)
        .optional()
        .describe('Labels to add.'),
      remove_labels: z
        .array(z.string().min(1).max(100))
        .max(10)
        .optional()
        .describe('Labels to remove.'),
      assignee: PersonArg.describe('A name, e-mail, "me" or "unassigned".'),
    }),
    output: z.object({ key: z.string(), changed: z.array(z.string()), url: z.string() }),
    target: (args) => keyTarget(scope, args.key),
    async handler(args, ctx) {
      const call = await deps.accounts.deps(deps, ctx);
      const issue = await writableIssue(call, ctx, args.key);
      const key = issue.key ?? args.key;
      const fields: Record<string, unknown> = {
        ...(args.summary === undefined ? {} : { summary: args.summary }),
        ...(args.description === undefined ? {} : { description: markdownToAdf(args.description) }),
        ...(args.priority === undefined ? {} : { priority: { name: args.priority } }),
      };
      if (args.assignee !== undefined)
        fields.assignee = {
          accountId: await accountIdOf(call.jira, ctx, args.assignee, 'assignee', [
            key.split('-')[0]!,
          ]),
        };
      const labels = [
        ...(args.add_labels ?? []).map((l) => ({ add: l })),
        ...(args.remove_labels ?? []).map((l) => ({ remove: l })),
      ];
      const changed = [...Object.keys(fields), ...(labels.length === 0 ? [] : ['labels'])];
      if (changed.length === 0)
        throw new ToolError('Nothing to change: give at least one field.', { code: 'no_change' });
      const request = {
        issueIdOrKey: key,
        fields,
        ...(labels.length === 0 ? {} : { update: { labels } }),
      };
      if (ctx.dryRun) return ctx.preview(request, `Would change ${changed.join(', ')} of ${key}.`);
      await writeCall(call, ctx, `edit ${key}`, (api) => api.issues.editIssue(request));
      const url = issueView(config.JIRA_URL, issue).url;
      return {
        structured: { key, changed, url },
        text: `Updated ${changed.join(', ')} of ${key}: ${url}`,
      };
    },
  });
}
