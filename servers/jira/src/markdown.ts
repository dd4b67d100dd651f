import { ToolError } from '@gatehouse/core';
import { markdownToAdf as convert } from 'marklassian';

/**
 * Markdown from the model as the ADF document Jira stores. marklassian converts; this filter then
 * makes it safe to show in Jira: no media at all (an external image is fetched when anyone opens
 * the issue — a channel out, like Slack's unfurls; `![alt](url)` becomes `[image: alt]`), link
 * marks only for http, https and mailto (a `javascript:` link becomes plain text), no smart-link
 * cards. The result is always sent as an object, never as a string: a string would take jira.js
 * down the v2 wiki-markup path, where Jira renders macros and images itself.
 */

type Node = {
  type: string;
  attrs?: Record<string, unknown>;
  marks?: Array<{ type: string; attrs?: Record<string, unknown> }>;
  content?: Node[];
  text?: string;
};

const MEDIA = new Set(['mediaSingle', 'mediaGroup', 'media', 'mediaInline']);
const CARDS = new Set(['inlineCard', 'blockCard', 'embedCard']);
const SAFE_HREF = /^(https?:|mailto:)/i;

function altOf(node: Node): string {
  const media = node.type === 'media' ? node : node.content?.find((c) => c.type === 'media');
  const alt = media?.attrs?.alt;
  return typeof alt === 'string' && alt !== '' ? alt : 'image';
}

function clean(node: Node, inline: boolean): Node[] {
  if (MEDIA.has(node.type)) {
    const text = { type: 'text', text: `[${altOf(node)}]` };
    return [inline ? text : { type: 'paragraph', content: [text] }];
  }
  if (CARDS.has(node.type)) {
    const url = typeof node.attrs?.url === 'string' ? node.attrs.url : '';
    const text = { type: 'text', text: url };
    return url === '' ? [] : [inline ? text : { type: 'paragraph', content: [text] }];
  }
  const marks = node.marks?.filter(
    (m) => m.type !== 'link' || (typeof m.attrs?.href === 'string' && SAFE_HREF.test(m.attrs.href)),
  );
  const childInline = node.type === 'paragraph' || node.type === 'heading' || inline;
  return [
    {
      ...node,
      ...(node.marks === undefined ? {} : marks!.length === 0 ? { marks: undefined } : { marks }),
      ...(node.content === undefined
        ? {}
        : { content: node.content.flatMap((c) => clean(c, childInline)) }),
    },
  ].map((n) => JSON.parse(JSON.stringify(n)) as Node);
}

/** The ADF document of a Markdown text, filtered as above. */
export function markdownToAdf(markdown: string): {
  type: 'doc';
  version: 1;
  content: Array<Record<string, unknown>>;
} {
  if (markdown.length > 32_000)
    throw new ToolError('The text is longer than 32 000 characters.', { code: 'too_long' });
  const doc = convert(markdown) as unknown as Node;
  const content = (doc.content ?? []).flatMap((n) => clean(n, false)) as unknown as Array<
    Record<string, unknown>
  >;
  return { type: 'doc', version: 1, content };
}
