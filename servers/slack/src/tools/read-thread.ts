import { defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { SlackDeps } from '../deps.js';
import { ChannelArg, CursorArg, SLACK_READ, TsArg } from '../deps.js';
import { pageResult } from '../messages.js';
import { ReadOutput } from './read-channel.js';

/** `slack_read_thread`: one thread, the parent first, replies oldest first. */
export function readThreadTool(deps: SlackDeps) {
  const { config } = deps;
  return defineTool({
    name: 'slack_read_thread',
    title: 'Read a thread',
    description: 'A thread: its parent message, then the replies oldest first.',
    access: 'read',
    annotations: SLACK_READ,
    input: z.strictObject({
      channel: ChannelArg,
      thread_ts: TsArg.describe('The ts of the thread’s parent message.'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(200)
        .optional()
        .describe("Messages per page (default: the server's page size)."),
      cursor: CursorArg,
    }),
    output: ReadOutput,
    target: (args) => deps.accounts.target(args.channel),
    async handler(args, ctx) {
      const { acting, channel } = await deps.accounts.channel(ctx, args.channel, 'read');
      const { slack } = acting;
      const limit = Math.min(args.limit ?? config.SLACK_PAGE_SIZE, slack.maxPage);
      const page = await slack.call(ctx, 'history', (c) =>
        c.conversations.replies({
          channel: channel.id,
          ts: args.thread_ts,
          limit,
          ...(args.cursor === undefined ? {} : { cursor: args.cursor }),
        }),
      );
      return pageResult(
        acting,
        ctx,
        channel,
        page,
        (n, more) =>
          `Thread ${args.thread_ts} in #${channel.name}: ${n} message(s)${more ? ' (more: pass next_cursor)' : ''}`,
      );
    },
  });
}
