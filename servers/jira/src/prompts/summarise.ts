import { definePrompt } from '@gatehouse/core';
import * as z from 'zod';
import type { JiraDeps } from '../deps.js';
import { allowedProject } from '../format.js';
import { quote } from '../jql.js';
import { projectCompleter } from '../resources/project-resources.js';
import { lines, user } from './common.js';

/** The `jira_summarise` prompt. */
export function summarisePrompt(deps: JiraDeps) {
  return definePrompt({
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
        description: 'Only issues updated since this date (YYYY-MM-DD); default: the open backlog.',
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
  });
}
