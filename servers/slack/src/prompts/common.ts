import type { RequestContext } from '@gatehouse/core';
import * as z from 'zod';
import type { SlackDeps } from '../deps.js';
import { messageLine, viewMessages } from '../messages.js';
import { channelCompleter } from '../resources/channel-resources.js';

/** A date or a time that exists (2026-13-45 does not): checked, so no NaN reaches Slack. */
export const SINCE = z
  .string()
  .refine(
    (v) =>
      (z.iso.date().safeParse(v).success ||
        z.iso.datetime({ offset: true }).safeParse(v).success) &&
      !Number.isNaN(Date.parse(v)),
    'expected an ISO date (2026-12-02) or time (2026-12-02T09:00:00Z) that exists',
  );

/** Recent messages of an allowed channel (or a thread), framed as data. */
export async function recent(
  deps: SlackDeps,
  ctx: RequestContext,
  channelArg: string,
  options: { since?: string | undefined; thread?: string | undefined; limit: number },
): Promise<{ name: string; text: string; count: number }> {
  const { acting, channel } = await deps.accounts.channel(ctx, channelArg, 'read');
  const { slack } = acting;
  const oldest =
    options.since === undefined ? undefined : (Date.parse(options.since) / 1000).toFixed(6);
  const limit = Math.min(options.limit, slack.maxPage);
  const page = await slack.call(ctx, 'history', (c) =>
    options.thread === undefined
      ? c.conversations.history({ channel: channel.id, limit, ...(oldest ? { oldest } : {}) })
      : c.conversations.replies({ channel: channel.id, ts: options.thread, limit }),
  );
  const views = await viewMessages(
    acting.people,
    ctx,
    channel.id,
    acting.workspace.url,
    page.messages ?? [],
  );
  const ordered = options.thread === undefined ? [...views].reverse() : views;
  return {
    name: channel.name,
    count: views.length,
    text: ctx.untrusted(
      ordered.map(messageLine).join('\n') || '(no messages)',
      `Slack messages in #${channel.name}`,
    ),
  };
}

/** A user message of a prompt. */
export const user = (text: string) => ({
  role: 'user' as const,
  content: { type: 'text' as const, text },
});

/** The `channel` argument every prompt takes. */
export function channelArgument(deps: SlackDeps) {
  return {
    description: 'The channel (#name or id).',
    required: true,
    complete: channelCompleter(deps),
  } as const;
}
