import { definePrompt } from '@gatehouse/core';
import * as z from 'zod';
import type { JiraDeps } from './deps.js';
import { issueTypesOf } from './createmeta.js';
import type { JiraIssue } from './format.js';
import {
  VIEW_FIELDS,
  adfToMarkdown,
  allowedKey,
  allowedProject,
  issueLine,
  issueView,
  keyTarget,
  requireInScope,
} from './format.js';
import { quote, scopeClause } from './jql.js';
import { projectCompleter } from './resources.js';

const user = (text: string) => ({
  role: 'user' as const,
  content: { type: 'text' as const, text },
});

/** Issues of the allowed projects matching a server-written condition, as lines. */
async function lines(
  deps: JiraDeps,
  ctx: Parameters<Parameters<typeof definePrompt>[0]['handler']>[1],
  where: string,
  limit: number,
) {
  const page = await deps.jira.call(ctx, 'read', (api) =>
    api.issueSearch.searchAndReconsileIssuesUsingJqlPost({
      jql: `${scopeClause(deps.scope.names)} AND ${where} ORDER BY updated DESC`,
      fields: VIEW_FIELDS,
      maxResults: limit,
    }),
  );
  return ((page.issues ?? []) as JiraIssue[])
    .filter((i) => deps.scope.allows(i.fields?.project?.key ?? ''))
    .map((i) => issueLine(issueView(deps.config.JIRA_URL, i)));
}

export function jiraPrompts(deps: JiraDeps) {
  return [
    definePrompt({
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
        const issue = (await deps.jira.call(ctx, 'read', (api) =>
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
    }),
    definePrompt({
      name: 'jira_write_bug_report',
      title: 'Write a bug report',
      description:
        "Turn a description of a problem into a bug report in the project's fields (its issue types are embedded; the create-metadata resource has the fields), ready for jira_create_issue with dry_run.",
      arguments: {
        project: {
          description: 'The project key.',
          required: true,
          complete: projectCompleter(deps),
        },
        problem: {
          description: 'What went wrong, in your words.',
          required: true,
          schema: z.string().min(3).max(4_000),
        },
      },
      target: ({ project }) => deps.scope.target(allowedProject(deps.scope, project)),
      handler: async ({ project, problem }, ctx) => {
        const key = project.trim().toUpperCase();
        const names = (await issueTypesOf(deps.jira, ctx, key)).map((t) => t.name).join(', ');
        return {
          description: `Bug report for ${key}`,
          messages: [
            user(
              `Write a bug report for project ${key} about:\n${problem}\n\nIssue types there: ${names}. Read jira://project/${key}/createmeta for the required fields and allowed values. Use a one-line summary, then Markdown: steps to reproduce, expected, actual, impact. Then call jira_create_issue with dry_run: true and show me the preview; create it only after I approve.`,
            ),
          ],
        };
      },
    }),
    definePrompt({
      name: 'jira_summarise',
      title: 'Summarise a backlog, sprint, release or recent work',
      description:
        'Summarise the open backlog of a project, a sprint, a release (fix version), or what changed since a date: themes, what is stuck, what is urgent. The issues are embedded.',
      arguments: {
        project: {
          description: 'The project key.',
          required: true,
          complete: projectCompleter(deps),
        },
        since: {
          description:
            'Only issues updated since this date (YYYY-MM-DD); default: the open backlog.',
          schema: z.iso.date(),
        },
        sprint: { description: 'Only this sprint (its name).', schema: z.string().min(1).max(120) },
        release: {
          description: 'Only this release (its fix version name).',
          schema: z.string().min(1).max(120),
        },
      },
      target: ({ project }) => deps.scope.target(allowedProject(deps.scope, project)),
      handler: async ({ project, since, sprint, release }, ctx) => {
        const key = project.trim().toUpperCase();
        const scope = [
          `project = ${quote(key)}`,
          ...(sprint === undefined ? [] : [`sprint = ${quote(sprint)}`]),
          ...(release === undefined ? [] : [`fixVersion = ${quote(release)}`]),
        ];
        const what = [
          ...(sprint === undefined ? [] : [`sprint ${sprint}`]),
          ...(release === undefined ? [] : [`release ${release}`]),
        ];
        const where =
          since !== undefined
            ? [...scope, `updated >= ${quote(since)}`].join(' AND ')
            : what.length > 0
              ? scope.join(' AND ')
              : [...scope, `statusCategory != ${quote('Done')}`].join(' AND ');
        const found = await lines(deps, ctx, where, 100);
        return {
          description: `Summary of ${key}`,
          messages: [
            user(
              `Summarise ${since !== undefined ? `what changed in ${key}${what.length > 0 ? ` (${what.join(', ')})` : ''} since ${since}` : what.length > 0 ? `${what.join(', ')} of ${key}` : `the open backlog of ${key}`} (${found.length} issues):\n\n${ctx.untrusted(found.join('\n') || '(none)', `Jira issues of ${key}`)}\n\nGive the main themes (with keys), what looks stuck or urgent, unassigned work worth picking up. One screen.`,
            ),
          ],
        };
      },
    }),
  ];
}
