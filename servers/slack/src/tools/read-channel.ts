import { defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { SlackDeps } from '../deps.js';
import { ChannelArg, CursorArg, SLACK_READ } from '../deps.js';
import { MessageSchema, pageResult } from '../messages.js';

/** An ISO time as a Slack ts bound. */
export const toTs = (iso: string): string => (Date.parse(iso) / 1000).toFixed(6);

export const ReadOutput = z.object({
  channel: z.object({ id: z.string(), name: z.string() }),
  messages: z.array(MessageSchema),
  next_cursor: z.string().optional(),
});

/** `slack_read_channel`: one page of a channel's messages, newest first. */
export function readChannelTool(deps: SlackDeps) {
  const { config } = deps;
  return defineTool({
    name: 'slack_read_channel',
    title: 'Read a channel',
    description:
      "Messages of a channel, newest first, with reply counts and permalinks. A message's ts is the thread_ts of its thread.",
    access: 'read',
    annotations: SLACK_READ,
    input: z.strictObject({
      channel: ChannelArg,
      oldest: z.iso
        .datetime({ offset: true })
        .optional()
        .describe('Only messages after this time (ISO 8601).'),
      latest: z.iso
        .datetime({ offset: true })
        .optional()
        .describe('Only messages before this time (ISO 8601).'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(200)
        .optional()
        .describe(
          "Messages per page (default: the server's page size; at most 15 when Slack limits history reads).",
        ),
      cursor: CursorArg,
    }),
    output: ReadOutput,
    target: (args) => deps.accounts.target(args.channel),
    async handler(args, ctx) {
      const { acting, channel } = await deps.accounts.channel(ctx, args.channel, 'read');
      const { slack } = acting;
      const limit = Math.min(args.limit ?? config.SLACK_PAGE_SIZE, slack.maxPage);
      const page = await slack.call(ctx, 'history', (c) =>
        c.conversations.history({
          channel: channel.id,
          limit,
          ...(args.cursor === undefined ? {} : { cursor: args.cursor }),
          ...(args.oldest === undefined ? {} : { oldest: toTs(args.oldest) }),
          ...(args.latest === undefined ? {} : { latest: toTs(args.latest) }),
        }),
      );
      return pageResult(
        acting,
        ctx,
        channel,
        page,
        (n, more) =>
          `${n} message(s) in #${channel.name}, newest first${more ? ' (older: pass next_cursor)' : ''}`,
      );
    },
  });
}
