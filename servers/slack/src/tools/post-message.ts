import { defineTool } from '@gatehouse/core';
import { dedupeKey, postOnce } from '@gatehouse/core/saas';
import * as z from 'zod';
import type { CallBounds } from '../client.js';
import { slackError } from '../client.js';
import type { SlackDeps } from '../deps.js';
import { ChannelArg, TsArg } from '../deps.js';
import { permalink } from '../messages.js';
import type { SlackMessage } from '../messages.js';
import { outgoingText } from '../outgoing.js';

/** The metadata event a post carries: its content key, for finding it after a lost answer. */
export const POST_EVENT = 'gatehouse_post';

/**
 * `slack_post_message` (write): a message or a thread reply, to a channel the bot may post to.
 * Mentions escaped, outside links refused or defanged, unfurls off, posted once.
 */
export function postMessageTool(deps: SlackDeps) {
  const { channels, slack, config } = deps;
  /** A message with this key posted in the dedupe window (metadata lookup), if any. */
  const find = async (
    bounds: CallBounds,
    channel: string,
    thread: string | undefined,
    key: string,
  ): Promise<SlackMessage | undefined> => {
    const oldest = (Date.now() / 1000 - config.SLACK_DEDUPE_WINDOW_MIN * 60).toFixed(6);
    const page = await slack.call(bounds, 'history', (c) =>
      thread === undefined
        ? c.conversations.history({ channel, oldest, limit: 100, include_all_metadata: true })
        : c.conversations.replies({
            channel,
            ts: thread,
            oldest,
            limit: 200,
            include_all_metadata: true,
          }),
    );
    return ((page.messages ?? []) as SlackMessage[]).find(
      (m) => m.metadata?.event_type === POST_EVENT && m.metadata.event_payload?.key === key,
    );
  };
  return defineTool({
    name: 'slack_post_message',
    title: 'Post a message',
    description:
      "Post a message (or a reply in a thread) to a channel the bot may post to. The text is sent as plain text: mentions such as @here or <@U…> arrive as text (unless the operator allowed them), links to hosts outside the operator's list are refused, link previews are off, and text that looks like a secret is refused. Preview with dry_run first. Repeating the same post within the dedupe window returns the first message instead of posting twice.",
    access: 'write',
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
    },
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
    }),
    target: (args) => channels.target(args.channel),
    async handler(args, ctx) {
      await channels.fresh(ctx);
      const channel = channels.forPost(args.channel);
      const text = outgoingText(args.text, config);
      const key = dedupeKey({
        who: ctx.principal.id,
        channel: channel.id,
        thread: args.thread_ts ?? null,
        text,
      });
      const request = {
        channel: channel.id,
        text,
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
          `Would post ${text.length} character(s) to #${channel.name}${args.thread_ts === undefined ? '' : ` in thread ${args.thread_ts}`}.`,
        );
      }
      const { value, deduplicated, recovered } = await postOnce(
        ctx.signal,
        () => find(ctx, channel.id, args.thread_ts, key),
        async () => {
          const posted = await slack.call(ctx, 'write', (c) => c.chat.postMessage(request));
          return { ts: posted.ts ?? '' };
        },
        { mapError: slackError },
      );
      const message: SlackMessage = {
        ts: value.ts ?? '',
        ...(args.thread_ts === undefined ? {} : { thread_ts: args.thread_ts }),
      };
      const link = permalink(deps.workspace.url, channel.id, message);
      return {
        structured: {
          channel: { id: channel.id, name: channel.name },
          ts: value.ts ?? '',
          ...(args.thread_ts === undefined ? {} : { thread_ts: args.thread_ts }),
          ...(link === undefined ? {} : { permalink: link }),
          deduplicated,
          recovered,
        },
        text: `${deduplicated ? 'Already posted within the dedupe window (an identical message; nothing new sent)' : recovered ? "Posted once (Slack's answer was lost; found the message)" : 'Posted'} to #${channel.name}${link === undefined ? '' : `: ${link}`}`,
      };
    },
  });
}
