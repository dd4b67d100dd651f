import { IDEMPOTENT_WRITE_ANNOTATIONS, ToolError, defineTool } from '@gatehouse/core';
import { dedupeKey, postOnce } from '@gatehouse/core/saas';
import * as z from 'zod';
import type { Acting } from '../acting.js';
import type { CallBounds } from '../client.js';
import { slackError } from '../client.js';
import type { SlackDeps } from '../deps.js';
import { ChannelArg, TsArg } from '../deps.js';
import { permalink } from '../messages.js';
import type { SlackMessage } from '../messages.js';
import { escapeForSlack, outgoingText } from '../outgoing.js';

/** The metadata event a post carries: its content key, for finding it after a lost answer. */
export const POST_EVENT = 'gatehouse_post';

/**
 * The posts made in the dedupe window by the account, for finding one after a lost answer or a
 * repeated call: this process's own posts first, then the channel's (or thread's) history back
 * to the window's start (`oldest`), page by page, as the account sees it. With
 * SLACK_HISTORY_LIMITED the look never waits for the history pacing and reads one page: a look
 * it cannot finish throws, and the post goes ahead saying so (it never blocks a post).
 */
function earlierPosts({ slack, posts: recent }: Acting, config: SlackDeps['config']) {
  const windowMs = config.SLACK_DEDUPE_WINDOW_MIN * 60_000;
  const remember = (key: string, ts: string) => recent.set(key, { ts, at: Date.now() });
  const find = async (
    bounds: CallBounds,
    channel: string,
    thread: string | undefined,
    key: string,
  ): Promise<SlackMessage | undefined> => {
    for (const [k, v] of recent) if (Date.now() - v.at > windowMs) recent.delete(k);
    const mine = recent.get(key);
    if (mine !== undefined) return { ts: mine.ts };
    if (!slack.historyFree())
      throw new ToolError(
        'the duplicate check was skipped: this app may read history once a minute (SLACK_HISTORY_LIMITED)',
        { code: 'lookup_paced' },
      );
    const oldest = ((Date.now() - windowMs) / 1000).toFixed(6);
    const pages = config.SLACK_HISTORY_LIMITED ? 1 : 10;
    let cursor: string | undefined;
    for (let page = 0; page < pages; page++) {
      const answer = await slack.call(bounds, 'history', (c) =>
        thread === undefined
          ? c.conversations.history({
              channel,
              oldest,
              limit: slack.maxPage,
              include_all_metadata: true,
              ...(cursor === undefined ? {} : { cursor }),
            })
          : c.conversations.replies({
              channel,
              ts: thread,
              oldest,
              limit: slack.maxPage,
              include_all_metadata: true,
              ...(cursor === undefined ? {} : { cursor }),
            }),
      );
      const hit = ((answer.messages ?? []) as SlackMessage[]).find(
        (m) => m.metadata?.event_type === POST_EVENT && m.metadata.event_payload?.key === key,
      );
      if (hit !== undefined) return hit;
      cursor = answer.response_metadata?.next_cursor || undefined;
      if (answer.has_more !== true || cursor === undefined) return undefined;
    }
    throw new ToolError(
      `the duplicate check was not finished: more messages in the last ${config.SLACK_DEDUPE_WINDOW_MIN} minutes than it reads`,
      { code: 'lookup_bounded' },
    );
  };
  return { find, remember };
}

/**
 * `slack_post_message` (write): a message or a thread reply, to a channel the bot may post to.
 * Mentions escaped, outside links refused or defanged, unfurls off, posted once.
 */
export function postMessageTool(deps: SlackDeps) {
  const { config } = deps;
  return defineTool({
    name: 'slack_post_message',
    title: 'Post a message',
    description:
      "Post a message or thread reply, as plain text: mentions arrive as text unless allowed, links to hosts off the operator's list and text that looks like a secret are refused, previews are off. The same post repeated within the dedupe window returns the first.",
    access: 'write',
    annotations: IDEMPOTENT_WRITE_ANNOTATIONS,
    auditArgs: 'redacted',
    input: z.strictObject({
      channel: ChannelArg,
      text: z
        .string()
        .min(1)
        .max(4_000)
        .describe('The message, plain text (Slack mrkdwn styling such as *bold* works).'),
      thread_ts: TsArg.optional().describe('Reply in this thread (the ts of its parent message).'),
    }),
    output: z.object({
      channel: z.object({ id: z.string(), name: z.string() }),
      ts: z.string(),
      thread_ts: z.string().optional(),
      permalink: z.string().optional(),
      deduplicated: z
        .boolean()
        .describe('The same post was already made in the dedupe window; nothing new was sent'),
      recovered: z.boolean().describe("Slack's answer was lost; the message was found"),
      unchecked: z
        .string()
        .optional()
        .describe(
          'Why the check for an earlier identical post was not made (it was posted anyway)',
        ),
    }),
    target: (args) => deps.accounts.target(args.channel),
    async handler(args, ctx) {
      const { acting, channel } = await deps.accounts.channel(ctx, args.channel, 'post');
      const { slack } = acting;
      const earlier = earlierPosts(acting, config);
      const text = outgoingText(args.text, config);
      // Posted as a person, the operator's attribution line says the agent wrote it for them.
      const sent =
        slack.person && config.SLACK_ATTRIBUTION !== undefined
          ? `${text}\n_${escapeForSlack(config.SLACK_ATTRIBUTION, [])}_`
          : text;
      const key = dedupeKey({
        who: ctx.principal.id,
        channel: channel.id,
        thread: args.thread_ts ?? null,
        text,
      });
      const request = {
        channel: channel.id,
        text: sent,
        ...(args.thread_ts === undefined ? {} : { thread_ts: args.thread_ts }),
        // Nothing for Slack to expand or fetch: no unfurls, no name linking, no parsing.
        unfurl_links: false,
        unfurl_media: false,
        link_names: false,
        parse: 'none' as const,
        metadata: { event_type: POST_EVENT, event_payload: { key, audit_event: ctx.eventId } },
      };
      if (ctx.dryRun) {
        return ctx.preview(
          request,
          `Would post ${sent.length} character(s) to #${channel.name}${args.thread_ts === undefined ? '' : ` in thread ${args.thread_ts}`}.`,
        );
      }
      const outcome = await postOnce(
        ctx.signal,
        () => earlier.find(ctx, channel.id, args.thread_ts, key),
        async () => {
          const posted = await slack.call(ctx, 'write', (c) => c.chat.postMessage(request));
          earlier.remember(key, posted.ts ?? '');
          return { ts: posted.ts ?? '' };
        },
        { mapError: slackError, onLookupFailure: 'post' },
      );
      const { value, deduplicated, recovered } = outcome;
      const message: SlackMessage = {
        ts: value.ts ?? '',
        ...(args.thread_ts === undefined ? {} : { thread_ts: args.thread_ts }),
      };
      const link = permalink(acting.workspace.url, channel.id, message);
      return {
        structured: {
          channel: { id: channel.id, name: channel.name },
          ts: value.ts ?? '',
          ...(args.thread_ts === undefined ? {} : { thread_ts: args.thread_ts }),
          ...(link === undefined ? {} : { permalink: link }),
          deduplicated,
          recovered,
          ...(outcome.unchecked === undefined ? {} : { unchecked: outcome.unchecked }),
        },
        text: `${deduplicated ? 'Posted once (an identical request within the dedupe window already posted it; nothing new sent)' : recovered ? "Posted once (Slack's answer was lost; found the message)" : outcome.unchecked !== undefined ? `Posted (${outcome.unchecked}; if this was a retry, look for the message twice)` : 'Posted'} to #${channel.name}${link === undefined ? '' : `: ${link}`}`,
      };
    },
  });
}
