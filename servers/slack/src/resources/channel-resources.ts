import { defineResource } from '@gatehouse/core';
import type { Completer, RequestContext } from '@gatehouse/core';
import type { Acting } from '../acting.js';
import type { SlackDeps } from '../deps.js';

/**
 * Completes a channel argument (#name) from the caller's readable channels only: the bot's, or
 * — acting as each person — their own directory (none before they link an account).
 */
export function channelCompleter(deps: SlackDeps): Completer {
  return async (value, context) => {
    const acting = await deps.accounts.ifLinked(context);
    if (acting === undefined) return [];
    await acting.channels.fresh(context);
    const prefix = value.replace(/^#/, '').toLowerCase();
    return acting.channels
      .readable()
      .filter((c) => !c.is_im && !c.is_mpim && c.name.toLowerCase().startsWith(prefix))
      .map((c) => `#${c.name}`);
  };
}

/**
 * One channel's facts. Its topic and purpose are written by members, so each is framed as
 * untrusted data like any tool result's third-party text (the JSON stays JSON).
 */
const view = ({ channels }: Acting, id: string, ctx: RequestContext) => {
  const c = channels.readable().find((x) => x.id === id)!;
  const framed = (text: string, what: string) =>
    text === '' ? '' : ctx.untrusted(text, `Slack #${c.name} ${what}`);
  return {
    id: c.id,
    name: c.name,
    topic: framed(c.topic, 'topic'),
    purpose: framed(c.purpose, 'purpose'),
    members: c.num_members ?? null,
    private: c.is_private,
    direct: c.is_im || c.is_mpim,
    shared_externally: c.is_external,
    archived: c.is_archived,
    // Acting as a person: whether they are a member (the field keeps its name: one shape).
    bot_is_member: c.is_member,
    can_post: channels.canPost(c.id),
  };
};

/** `slack://channels` (the directory) and `slack://channel/{channel}` (one channel's facts). */
export function slackResources(deps: SlackDeps) {
  return [
    defineResource({
      kind: 'static',
      name: 'slack_channels',
      uri: 'slack://channels',
      title: 'Channel directory',
      description:
        'The channels this server may read: id, name, topic, purpose, flags, whether the bot may post.',
      mimeType: 'application/json',
      read: async (ctx) => {
        const acting = await deps.accounts.for(ctx);
        await acting.channels.fresh(ctx);
        return {
          text: JSON.stringify(
            acting.channels.readable().map((c) => view(acting, c.id, ctx)),
            null,
            1,
          ),
          mimeType: 'application/json',
        };
      },
    }),
    defineResource({
      kind: 'template',
      name: 'slack_channel',
      uriTemplate: 'slack://channel/{channel}',
      title: 'Channel',
      description:
        "One allowed channel's facts (by id or name): topic, purpose, members, flags, posting.",
      mimeType: 'application/json',
      list: async (ctx) => {
        const acting = await deps.accounts.ifLinked(ctx);
        if (acting === undefined) return [];
        const { channels } = acting;
        await channels.fresh(ctx);
        return channels.readable().map((c) => ({
          uri: `slack://channel/${c.id}`,
          name: c.is_im || c.is_mpim ? c.id : `#${c.name}`,
          title: `Channel #${c.name}`,
        }));
      },
      complete: { channel: channelCompleter(deps) },
      target: (v) => deps.accounts.target(v.channel ?? ''),
      read: async (_uri, variables, ctx) => {
        const acting = await deps.accounts.for(ctx);
        await acting.channels.fresh(ctx);
        const arg = decodeURIComponent(variables.channel ?? '');
        const id = acting.channels.idOf(
          arg.startsWith('C') || arg.startsWith('G') || arg.startsWith('D')
            ? arg
            : `#${arg.replace(/^#/, '')}`,
        );
        if (id === undefined) return undefined;
        ctx.actsOn(`slack:${id}`);
        return {
          text: JSON.stringify(view(acting, id, ctx), null, 1),
          mimeType: 'application/json',
        };
      },
    }),
  ];
}
