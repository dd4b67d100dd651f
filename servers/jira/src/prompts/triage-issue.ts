import { definePrompt } from '@gatehouse/core';
import type { JiraDeps } from '../deps.js';
import type { JiraIssue } from '../format.js';
import {
  VIEW_FIELDS,
  adfToMarkdown,
  allowedKey,
  issueLine,
  issueView,
  keyTarget,
  requireInScope,
} from '../format.js';
import { quote } from '../jql.js';
import { lines, user } from './common.js';

/** The `jira_triage_issue` prompt. */
export function triageIssuePrompt(deps: JiraDeps) {
  return definePrompt({
    name: 'jira_triage_issue',
    title: 'Triage an issue',
    description:
      'Triage one issue: likely duplicates (issues with similar words), labels, priority, and the next step. The issue and the candidates are embedded.',
    arguments: { key: { description: 'The issue key (OPS-12).', required: true } },
    // Checked before the handler runs (the runner's target stage): the handler gets a key of
    // an allowed project only.
    target: ({ key }) => keyTarget(deps.scope, allowedKey(deps.scope, key)),
    handler: async ({ key }, ctx) => {
      const asked = key.trim().toUpperCase();
      const { jira } = await deps.accounts.for(ctx);
      const issue = (await jira.call(ctx, 'read', (api) =>
        api.issues.getIssue({ issueIdOrKey: asked, fields: [...VIEW_FIELDS, 'description'] }),
      )) as JiraIssue;
      requireInScope(deps.scope, asked, issue);
      const view = issueView(deps.config.JIRA_URL, issue);
      const words = view.summary
        .replace(/[^\p{L}\p{N}\s]/gu, ' ')
        .split(/\s+/)
        .filter((w) => w.length > 3)
        .slice(0, 4);
      const similar =
        words.length === 0
          ? []
          : await lines(
              deps,
              ctx,
              `key != ${quote(view.key)} AND text ~ ${quote(words.join(' '))}`,
              10,
            );
      return {
        description: `Triage of ${view.key}`,
        messages: [
          user(
            `Triage ${view.key}.\n\n${ctx.untrusted(`${issueLine(view)}\n\n${adfToMarkdown(issue.fields?.description) || '(no description)'}`, `Jira issue ${view.key}`)}\n\nPossible duplicates:\n${ctx.untrusted(similar.join('\n') || '(none found)', 'Jira issues')}\n\nSay whether it duplicates one of them, which labels and priority fit, and the next step. Change nothing yet: propose jira_update_issue calls (with dry_run) for me to approve.`,
          ),
        ],
      };
    },
  });
}
