import { defineResource } from '@gatehouse/core';
import type { Completer, RequestContext } from '@gatehouse/core';
import type { SlackDeps } from '../deps.js';

/** Completes a channel argument (#name) from the readable channels only. */
export function channelCompleter(deps: SlackDeps): Completer {
  return (value) => {
    const prefix = value.replace(/^#/, '').toLowerCase();
    return deps.channels
      .readable()
      .filter((c) => !c.is_im && !c.is_mpim && c.name.toLowerCase().startsWith(prefix))
      .map((c) => `#${c.name}`);
  };
}

/**
 * One channel's facts. Its topic and purpose are written by members, so each is framed as
 * untrusted data like any tool result's third-party text (the JSON stays JSON).
 */
const view = (deps: SlackDeps, id: string, ctx: RequestContext) => {
  const c = deps.channels.readable().find((x) => x.id === id)!;
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
    bot_is_member: c.is_member,
    can_post: deps.channels.canPost(c.id),
  };
};

/** `slack://channels` (the directory) and `slack://channel/{channel}` (one channel's facts). */
export function slackResources(deps: SlackDeps) {
  const { channels } = deps;
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
        await channels.fresh(ctx);
        return {
          text: JSON.stringify(
            channels.readable().map((c) => view(deps, c.id, ctx)),
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
        await channels.fresh(ctx);
        return channels.readable().map((c) => ({
          uri: `slack://channel/${c.id}`,
          name: c.is_im || c.is_mpim ? c.id : `#${c.name}`,
          title: `Channel #${c.name}`,
        }));
      },
      complete: { channel: channelCompleter(deps) },
      target: (v) => channels.target(v.channel ?? ''),
      read: async (_uri, variables, ctx) => {
        await channels.fresh(ctx);
        const arg = decodeURIComponent(variables.channel ?? '');
        const id = channels.idOf(
          arg.startsWith('C') || arg.startsWith('G') || arg.startsWith('D')
            ? arg
            : `#${arg.replace(/^#/, '')}`,
        );
        if (id === undefined) return undefined;
        return {
          text: JSON.stringify(view(deps, id, ctx), null, 1),
          mimeType: 'application/json',
        };
      },
    }),
  ];
}
