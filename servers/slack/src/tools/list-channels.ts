import { defineTool, untrusted } from '@gatehouse/core';
import * as z from 'zod';
import type { SlackDeps } from '../deps.js';
import { SLACK_READ } from '../deps.js';

const ChannelSchema = z.object({
  id: z.string(),
  name: z.string(),
  topic: untrusted(z.string()),
  purpose: untrusted(z.string()),
  members: z.number().int().optional(),
  private: z.boolean(),
  direct: z.boolean().describe('A direct message or group DM'),
  shared_externally: z.boolean().describe('Slack Connect: shared with another organisation'),
  archived: z.boolean(),
  bot_is_member: z
    .boolean()
    .describe(
      'Whether the account the server reads as is a member (the bot; acting as each person, you): reading needs it',
    ),
  can_post: z.boolean().describe('slack_post_message may post here (when write tools are on)'),
});

/** `slack_list_channels`: the allowed channels, from the directory (one list call at most). */
export function listChannelsTool(deps: SlackDeps) {
  return defineTool({
    name: 'slack_list_channels',
    title: 'List channels',
    description:
      'The channels this server may read: topic, purpose, members, private, direct, shared externally, whether the bot is a member (needed to read) and may post.',
    access: 'read',
    annotations: SLACK_READ,
    input: z.strictObject({
      name: z
        .string()
        .trim()
        .max(80)
        .optional()
        .describe('Only channels whose name contains this.'),
    }),
    output: z.object({ channels: z.array(ChannelSchema) }),
    async handler(args, ctx) {
      const { channels, slack } = await deps.accounts.for(ctx);
      const notMember = slack.person ? ' — you are not a member' : ' — bot not a member';
      await channels.fresh(ctx);
      const filter = args.name?.replace(/^#/, '').toLowerCase();
      const list = channels
        .readable()
        .filter((c) => filter === undefined || c.name.toLowerCase().includes(filter))
        .map((c) => ({
          id: c.id,
          name: c.name,
          topic: c.topic,
          purpose: c.purpose,
          ...(c.num_members === undefined ? {} : { members: c.num_members }),
          private: c.is_private,
          direct: c.is_im || c.is_mpim,
          shared_externally: c.is_external,
          archived: c.is_archived,
          bot_is_member: c.is_member,
          can_post: channels.canPost(c.id),
        }));
      const lines = list.map(
        (c) =>
          `#${c.name} (${c.id})${c.private ? ' private' : ''}${c.shared_externally ? ' Slack Connect' : ''}${c.archived ? ' archived' : ''}${c.bot_is_member ? '' : notMember}${c.can_post ? ' — can post' : ''}${c.topic ? `: ${c.topic}` : ''}`,
      );
      return {
        structured: { channels: list },
        text: `${list.length} channel(s)\n${ctx.untrusted(lines.join('\n') || '(none)', 'Slack channel names and topics')}`,
      };
    },
  });
}
