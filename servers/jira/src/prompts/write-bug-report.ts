import { definePrompt } from '@gatehouse/core';
import * as z from 'zod';
import type { JiraDeps } from '../deps.js';
import { issueTypesOf } from '../createmeta.js';
import { allowedProject } from '../format.js';
import { projectCompleter } from '../resources/project-resources.js';
import { user } from './common.js';

/** The `jira_write_bug_report` prompt. */
export function writeBugReportPrompt(deps: JiraDeps) {
  return definePrompt({
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
      const { jira } = await deps.accounts.for(ctx);
      const names = (await issueTypesOf(jira, ctx, key)).map((t) => t.name).join(', ');
      return {
        description: `Bug report for ${key}`,
        messages: [
          user(
            `Write a bug report for project ${key} about:\n${problem}\n\nIssue types there: ${names}. Read jira://project/${key}/createmeta for the required fields and allowed values. Use a one-line summary, then Markdown: steps to reproduce, expected, actual, impact. Then call jira_create_issue with dry_run: true and show me the preview; create it only after I approve.`,
          ),
        ],
      };
    },
  });
}
