import { defineTool } from '@gatehouse/core';
import * as z from 'zod';
import { requestOptions } from '../client.js';
import type { GitHubDeps } from '../deps.js';
import { allowedRepo, repoTarget } from '../deps.js';
import { dedupeKey, findComment, postOnce, withMarker } from '../idempotency.js';
import { RepoArg } from './common.js';

/** `github_add_comment`: a comment on an issue, posted once. */
export function addCommentTool(deps: GitHubDeps) {
  return defineTool({
    name: 'github_add_comment',
    title: 'Comment on an issue',
    description:
      'Add a Markdown comment to an issue (or pull request). A repeat within the dedupe window returns the first one.',
    access: 'write',
    toolset: 'comments',
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    auditArgs: 'redacted',
    input: z.strictObject({
      repo: RepoArg,
      number: z.number().int().positive().describe('The issue number.'),
      body: z.string().trim().min(1).max(60_000).describe('Markdown comment.'),
    }),
    output: z.object({
      comment: z.object({ id: z.number().int(), url: z.string(), created_at: z.string() }),
      deduplicated: z.boolean(),
      recovered: z
        .boolean()
        .describe("True when GitHub's answer was lost and the comment was found"),
    }),
    target: (args) => repoTarget(args.repo, args.number),
    async handler(args, ctx) {
      const repo = allowedRepo(deps, args.repo);
      const acting = await deps.accounts.for(ctx);
      if (ctx.dryRun) {
        return ctx.preview(
          {
            method: 'POST',
            path: `/repos/${repo.owner}/${repo.repo}/issues/${args.number}/comments`,
            body: { body: args.body },
          },
          `would comment on ${repo.owner}/${repo.repo}#${args.number}`,
        );
      }
      const key = dedupeKey({
        who: ctx.principal.id,
        as: acting.account, // a write is repeated only by the same person as the same account
        repo: `${repo.owner}/${repo.repo}`,
        number: args.number,
        body: args.body,
      });
      const window = deps.config.GITHUB_DEDUPE_WINDOW_MIN;
      const {
        value: c,
        deduplicated,
        recovered,
      } = await postOnce(
        ctx,
        () => findComment(acting.github, ctx, repo, args.number, key, window),
        async () =>
          (
            await acting.github.rest.issues.createComment({
              owner: repo.owner,
              repo: repo.repo,
              issue_number: args.number,
              body: withMarker(args.body, key),
              ...requestOptions(ctx, { retries: 0 }),
            })
          ).data,
      );
      return {
        structured: {
          comment: { id: c.id, url: c.html_url, created_at: c.created_at },
          deduplicated,
          recovered,
        },
        text: `${deduplicated ? 'Commented once (an identical request within the dedupe window already posted it; nothing new sent)' : recovered ? "Commented once (GitHub's answer was lost; found the comment)" : 'Commented'}: ${c.html_url}`,
      };
    },
  });
}
