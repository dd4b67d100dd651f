import { definePrompt } from '@gatehouse/core';
import * as z from 'zod';
import type { SlackDeps } from '../deps.js';
import { channelArgument, user } from './common.js';

/** The `slack_draft_announcement` prompt. */
export function draftAnnouncementPrompt(deps: SlackDeps) {
  const channel = channelArgument(deps);
  return definePrompt({
    name: 'slack_draft_announcement',
    title: 'Draft an announcement',
    description:
      'Draft an announcement for a channel for the user to review; nothing is posted until they approve.',
    arguments: {
      channel,
      topic: {
        description: 'What to announce.',
        required: true,
        schema: z.string().min(3).max(2_000),
      },
      audience: { description: 'Who it is for (default: the channel).' },
    },
    target: (args) => deps.accounts.target(args.channel),
    handler: async (args, ctx) => {
      const { acting, channel: target } = await deps.accounts.channel(ctx, args.channel, 'read');
      const posting = acting.channels.canPost(target.id);
      return {
        description: `Announcement for #${target.name}`,
        messages: [
          user(
            `Draft an announcement for #${target.name}${args.audience === undefined ? '' : ` aimed at ${args.audience}`} about:\n${args.topic}\n\nKeep it short: a one-line summary first, then details, then what people should do. Plain text, no mass mentions. Show me the draft and wait for my approval.${posting ? ' When I approve, preview it with slack_post_message and dry_run: true, then post.' : ` This server may not post to #${target.name}; I will post it myself.`}`,
          ),
        ],
      };
    },
  });
}
