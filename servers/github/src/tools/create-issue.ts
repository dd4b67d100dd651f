import { ToolError, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import { requestOptions } from '../client.js';
import type { GitHubDeps } from '../deps.js';
import { allowedRepo, repoTarget } from '../deps.js';
import { issueOf } from '../format.js';
import { IssueViewSchema, projectIssue } from '../format.js';
import { dedupeKey, findIssue, postOnce, withMarker } from '../idempotency.js';
import { findTemplate, formSkeleton, missingFormFields, readTemplates } from '../templates.js';
import { LoginArg, RepoArg } from './common.js';

const CREATED_FIELDS = [
  'repo',
  'number',
  'title',
  'state',
  'labels',
  'assignees',
  'milestone',
  'url',
] as const;

/** `github_create_issue`: a new issue, optionally following one of the repository's templates. */
export function createIssueTool(deps: GitHubDeps) {
  return defineTool({
    name: 'github_create_issue',
    title: 'Create an issue',
    description:
      "Open an issue in an allowed repository. template applies the repository's issue template or form (title prefix, labels, assignees; a form's required sections must be filled in the body: see the issue-templates resource). A repeat within the dedupe window returns the first issue.",
    access: 'write',
    toolset: 'issues',
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    auditArgs: 'redacted',
    input: z.strictObject({
      repo: RepoArg,
      title: z.string().trim().min(1).max(256).describe('A short, specific title.'),
      body: z.string().max(60_000).optional().describe('Markdown body.'),
      labels: z
        .array(z.string().min(1).max(50))
        .max(20)
        .optional()
        .describe('Existing labels of the repository.'),
      assignees: z.array(LoginArg).max(10).optional().describe('GitHub logins to assign.'),
      milestone: z.number().int().positive().optional().describe('Milestone number.'),
      template: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('Template name or file (e.g. bug_report) to follow.'),
    }),
    output: z.object({
      issue: IssueViewSchema,
      deduplicated: z
        .boolean()
        .describe('True when an identical create had already made this issue'),
      recovered: z
        .boolean()
        .describe("True when GitHub's answer to this create was lost and the issue was found"),
    }),
    target: (args) => repoTarget(args.repo),
    async handler(args, ctx) {
      const repo = allowedRepo(deps, args.repo);
      const acting = await deps.accounts.for(ctx);
      let title = args.title;
      let labels = args.labels ?? [];
      let assignees = args.assignees ?? [];
      const body = args.body ?? '';
      if (args.template !== undefined) {
        const templates = await readTemplates(acting.github, ctx, repo);
        const template = findTemplate(templates, args.template);
        if (template === undefined) {
          const names = templates.templates.map((t) => t.name).join(', ') || 'none';
          throw new ToolError(
            `No issue template "${args.template}" in ${repo.owner}/${repo.repo} (templates: ${names}).`,
            {
              code: 'template_not_found',
            },
          );
        }
        const missing = missingFormFields(template, body);
        if (missing.length > 0) {
          throw new ToolError(
            `The body leaves required sections of "${template.name}" empty: ${missing.join(', ')}. Write the body as these sections:\n${formSkeleton(template)}`,
            { code: 'template_incomplete' },
          );
        }
        if (template.title_prefix !== null && !title.startsWith(template.title_prefix.trim())) {
          title = `${template.title_prefix}${title}`;
        }
        labels = [...new Set([...template.labels, ...labels])];
        assignees = [...new Set([...template.assignees, ...assignees])];
      }
      const request = {
        title,
        body,
        ...(labels.length > 0 ? { labels } : {}),
        ...(assignees.length > 0 ? { assignees } : {}),
        ...(args.milestone === undefined ? {} : { milestone: args.milestone }),
      };
      if (ctx.dryRun) {
        return ctx.preview(
          { method: 'POST', path: `/repos/${repo.owner}/${repo.repo}/issues`, body: request },
          // The title may carry the template's prefix: the repository's text, framed.
          `would open ${ctx.untrustedValue(title)} in ${repo.owner}/${repo.repo}`,
        );
      }
      const key = dedupeKey({
        who: ctx.principal.id,
        as: acting.account, // a write is repeated only by the same person as the same account
        repo: `${repo.owner}/${repo.repo}`,
        ...request,
      });
      const window = deps.config.GITHUB_DEDUPE_WINDOW_MIN;
      const { value, deduplicated, recovered } = await postOnce(
        ctx,
        () => findIssue(acting.github, ctx, repo, key, window),
        async () =>
          issueOf(
            (
              await acting.github.rest.issues.create({
                owner: repo.owner,
                repo: repo.repo,
                ...request,
                body: withMarker(body, key),
                // Never retried blindly: a retry after a lost answer could open a second issue.
                ...requestOptions(ctx, { retries: 0 }),
              })
            ).data,
          ),
      );
      const view = projectIssue(value, CREATED_FIELDS);
      return {
        structured: { issue: view, deduplicated, recovered },
        text: `${deduplicated ? 'Created once (an identical request within the dedupe window already created it; nothing new sent)' : recovered ? "Created once (GitHub's answer was lost; found the issue)" : 'Created'} ${view.repo}#${view.number}: ${view.url}`,
      };
    },
  });
}
