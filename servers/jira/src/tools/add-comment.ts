import { defineTool } from '@gatehouse/core';
import { dedupeKey, postOnce } from '@gatehouse/core/saas';
import * as z from 'zod';
import { jiraError } from '../client.js';
import type { JiraDeps } from '../deps.js';
import { keyTarget } from '../format.js';
import { markdownToAdf } from '../markdown.js';
import { DEDUPE_PROPERTY, JIRA_WRITE, findComment, writeCall, writableIssue } from '../writes.js';
import { KeyArg, writeSaid } from './write-common.js';

/** `jira_add_comment` (write): Markdown as ADF, posted once. */
export function addCommentTool(deps: JiraDeps) {
  const { scope, config } = deps;
  return defineTool({
    name: 'jira_add_comment',
    title: 'Comment on an issue',
    description:
      'Add a Markdown comment (images and non-web links are left out). Repeating the same comment returns the first one.',
    access: 'write',
    annotations: JIRA_WRITE,
    auditArgs: 'redacted',
    input: z.strictObject({
      key: KeyArg,
      body: z.string().min(1).max(32_000).describe('Markdown.'),
    }),
    output: z.object({
      key: z.string(),
      comment_id: z.string(),
      deduplicated: z.boolean().describe('An identical comment in the dedupe window is it'),
      recovered: z.boolean().describe("Jira's answer was lost; the comment was found"),
      unchecked: z
        .string()
        .optional()
        .describe('Why the check for an earlier identical comment failed (it was posted anyway)'),
    }),
    target: (args) => keyTarget(scope, args.key),
    async handler(args, ctx) {
      const call = await deps.accounts.deps(deps, ctx);
      const issue = await writableIssue(call, ctx, args.key);
      const key = issue.key ?? args.key;
      const body = markdownToAdf(args.body);
      const dedupe = dedupeKey({ who: ctx.principal.id, key, body });
      const request = {
        issueIdOrKey: key,
        body,
        properties: [{ key: DEDUPE_PROPERTY, value: { key: dedupe, audit_event: ctx.eventId } }],
      };
      if (ctx.dryRun) return ctx.preview(request, `Would comment on ${key}.`);
      const outcome = await postOnce(
        ctx.signal,
        () => findComment(call.jira, ctx, key, dedupe, config.JIRA_DEDUPE_WINDOW_MIN),
        async () => {
          const comment = await writeCall(call, ctx, `comment on ${key}`, (api) =>
            api.issueComments.addComment(request),
          );
          return comment.id ?? '';
        },
        { mapError: jiraError, onLookupFailure: 'post' },
      );
      const { value, deduplicated, recovered } = outcome;
      return {
        structured: {
          key,
          comment_id: value,
          deduplicated,
          recovered,
          ...(outcome.unchecked === undefined ? {} : { unchecked: outcome.unchecked }),
        },
        text: `${writeSaid(outcome, 'commented', `a comment on ${key}`)} on ${key} (comment ${value}).`,
      };
    },
  });
}
