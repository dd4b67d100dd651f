import { untrusted } from '@gatehouse/core';
import * as z from 'zod';
import type { People } from './people.js';
import type { CallBounds } from './client.js';

/** A message as the model gets it: compact, names resolved, Slack's markup made readable. */
export const MessageSchema = z.object({
  ts: z.string().describe("Slack's id of the message (also the thread id of a thread's parent)"),
  time: z.string().describe('ISO 8601'),
  // Display names are chosen by their owners, texts written by members: framed in either view.
  author: untrusted(z.string()),
  author_id: z.string(),
  text: untrusted(z.string()),
  replies: z.number().int().optional().describe('Replies in its thread'),
  thread_ts: z.string().optional(),
  permalink: z.string().optional(),
});
export type MessageView = z.infer<typeof MessageSchema>;

/** A message as Slack returns it (the fields the server reads). */
export interface SlackMessage {
  ts?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  text?: string;
  thread_ts?: string;
  reply_count?: number;
  subtype?: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>' };

/**
 * Slack's markup as plain text: `<@U…>` → @name, `<#C…|name>` → #name, `<!here>` → @here,
 * `<url|label>` → label (url), and the three escaped characters back. The result is data for the
 * model (sanitised and framed by the core); it is never posted back as it is.
 */
export function readable(text: string, names: ReadonlyMap<string, string>): string {
  return text
    .replace(/<([^<>]*)>/g, (_, inner: string) => {
      const [target = '', label] = inner.split('|');
      if (target.startsWith('@'))
        return `@${label ?? names.get(target.slice(1)) ?? target.slice(1)}`;
      if (target.startsWith('#')) return `#${label ?? target.slice(1)}`;
      if (target.startsWith('!subteam^')) return `@${(label ?? 'group').replace(/^@/, '')}`;
      // <!date^1700000000^{date_short}|Nov 14>: the fallback text, else the date itself.
      if (target.startsWith('!date^')) return label ?? isoTime(target.split('^')[1] ?? '0');
      if (target.startsWith('!'))
        return `@${(label ?? target.slice(1).split('^')[0]!).replace(/^@/, '')}`;
      return label === undefined || label === target ? target : `${label} (${target})`;
    })
    .replace(/&(amp|lt|gt);/g, (m) => ENTITIES[m]!);
}

/** `1764500000.000100` → ISO time. */
export function isoTime(ts: string): string {
  return new Date(Number(ts) * 1000).toISOString();
}

/** The Slack URL of a message (no API call: the format Slack's own permalinks have). */
export function permalink(
  workspace: string | undefined,
  channel: string,
  m: SlackMessage,
): string | undefined {
  if (workspace === undefined || m.ts === undefined) return undefined;
  const base = `${workspace.replace(/\/$/, '')}/archives/${channel}/p${m.ts.replace('.', '')}`;
  return m.thread_ts !== undefined && m.thread_ts !== m.ts
    ? `${base}?thread_ts=${m.thread_ts}&cid=${channel}`
    : base;
}

/** Messages as the model gets them, authors and mentioned people resolved. */
export async function viewMessages(
  people: People,
  bounds: CallBounds,
  channel: string,
  workspace: string | undefined,
  messages: readonly SlackMessage[],
): Promise<MessageView[]> {
  const ids = new Set<string>();
  for (const m of messages) {
    if (m.user !== undefined) ids.add(m.user);
    for (const [, id] of (m.text ?? '').matchAll(/<@([UW][A-Z0-9]+)(?:\|[^>]*)?>/g)) ids.add(id!);
  }
  const names = await people.names(bounds, ids);
  return messages.map((m) => {
    const link = permalink(workspace, channel, m);
    const author = m.user ?? m.bot_id ?? '';
    return {
      ts: m.ts ?? '',
      time: isoTime(m.ts ?? '0'),
      author: m.user !== undefined ? (names.get(m.user) ?? m.user) : (m.username ?? author),
      author_id: author,
      text: readable(m.text ?? '', names),
      ...(m.reply_count === undefined || m.reply_count === 0 ? {} : { replies: m.reply_count }),
      ...(m.thread_ts === undefined ? {} : { thread_ts: m.thread_ts }),
      ...(link === undefined ? {} : { permalink: link }),
    };
  });
}

/** One line per message for the model's text view. */
export function messageLine(m: MessageView): string {
  const thread =
    m.replies === undefined
      ? ''
      : ` [${m.replies} repl${m.replies === 1 ? 'y' : 'ies'}, thread_ts ${m.ts}]`;
  // The author's id beside the display name (which any member can set to anything), and every
  // continuation line indented: a line at the margin is always a new message, never a forged one.
  const id = m.author_id !== '' && m.author_id !== m.author ? ` (${m.author_id})` : '';
  return `${m.time} ${m.author}${id}: ${m.text.replace(/\n/g, '\n    ')}${thread}`;
}

/** A page of history or replies as Slack returns it. */
export interface MessagePage {
  messages?: SlackMessage[];
  has_more?: boolean;
  response_metadata?: { next_cursor?: string };
}

/** A page of a channel's messages as a read tool returns it: structured, and framed text. */
export async function pageResult(
  deps: { people: People; workspace: { url?: string } },
  ctx: CallBounds & { untrusted(content: string, source: string): string },
  channel: { id: string; name: string },
  page: MessagePage,
  heading: (count: number, more: boolean) => string,
) {
  const messages = await viewMessages(
    deps.people,
    ctx,
    channel.id,
    deps.workspace.url,
    page.messages ?? [],
  );
  const next =
    page.has_more === true ? page.response_metadata?.next_cursor || undefined : undefined;
  return {
    structured: {
      channel: { id: channel.id, name: channel.name },
      messages,
      ...(next === undefined ? {} : { next_cursor: next }),
    },
    text: `${heading(messages.length, next !== undefined)}\n${ctx.untrusted(messages.map(messageLine).join('\n') || '(none)', `Slack messages in #${channel.name}`)}`,
  };
}
