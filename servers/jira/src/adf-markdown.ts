/**
 * ADF → Markdown. A port of adf-to-md 1.2.1 by Julian Lam (MIT,
 * https://github.com/julianlam/adf-to-md), the same output for the same documents. Ported, not
 * depended on: the package declares an ESLint config as a runtime dependency (33 MB of linters in
 * the production image), logs every unknown node to the console (stdout is the protocol on stdio)
 * and numbers ordered lists by mutating its input.
 *
 * Beyond adf-to-md, nothing a person reads in Jira is dropped: inline nodes render their text
 * (mentions, dates, status lozenges, emoji, placeholders), containers Markdown has no syntax for
 * (panels, expands, task and decision lists, layouts, extensions) render what is inside them, and
 * a node of a type this code does not know is descended into. Media render as a named
 * placeholder. Links keep only the schemes written links may have (http, https, mailto): any
 * other (`javascript:`, `data:`) is read as its text.
 */

interface AdfMark {
  type: string;
  attrs?: { href?: unknown };
}

interface AdfNode {
  type: string;
  text?: string;
  content?: AdfNode[];
  attrs?: Record<string, unknown>;
  marks?: AdfMark[];
}

/** The list an item is in: its kind and the item's number. */
interface ListContext {
  ordered: boolean;
  order: number;
}

/** The link schemes read back as links, as for links written (src/markdown.ts). */
const SAFE_HREF = /^(https?:|mailto:)/i;

/** A link target as Markdown link text, or undefined for a scheme that is not a web link. */
function safeHref(value: unknown): string | undefined {
  const href = scalar(value).trim();
  return SAFE_HREF.test(href)
    ? href.replace(
        /[()\s]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
      )
    : undefined;
}

/** A date node's timestamp (ms since the epoch, as a string) as yyyy-mm-dd (UTC). */
function dateText(value: unknown): string {
  const ms = Number(scalar(value));
  return Number.isFinite(ms) && scalar(value) !== '' ? new Date(ms).toISOString().slice(0, 10) : '';
}

function convertNode(node: AdfNode, list?: ListContext): string {
  const content = node.content ?? [];
  const all = (separator: string) => content.map((n) => convertNode(n)).join(separator);
  const attr = (key: string) => scalar(node.attrs?.[key]);
  switch (node.type) {
    case 'doc':
      return all('\n\n');
    case 'text':
      return withMarks(node);
    case 'paragraph':
      return all('');
    case 'heading':
      return `${'#'.repeat(Number(node.attrs?.level) || 1)} ${all('')}`;
    case 'hardBreak':
      return '\n';
    case 'inlineCard':
    case 'blockCard':
    case 'embedCard': {
      const url = safeHref(node.attrs?.url);
      return url === undefined ? attr('url') : `[${url}](${url})`;
    }
    case 'mention': {
      const name = attr('text') || attr('id');
      return name.startsWith('@') ? name : `@${name}`;
    }
    case 'date':
      return dateText(node.attrs?.timestamp);
    case 'status':
      return `[${attr('text')}]`;
    case 'placeholder':
      return attr('text');
    case 'panel': {
      const kind = attr('panelType') || 'info';
      return `> **${kind[0]!.toUpperCase()}${kind.slice(1)}:** ${all('\n> ')}`;
    }
    case 'expand':
    case 'nestedExpand':
      return `**${attr('title') || 'Details'}**\n\n${all('\n\n')}`;
    case 'taskList':
    case 'decisionList':
      return content.map((n) => convertNode(n)).join('\n');
    case 'taskItem':
      return `  - [${attr('state') === 'DONE' ? 'x' : ' '}] ${all('')}`;
    case 'decisionItem':
      return `  - Decision: ${all('')}`;
    case 'mediaSingle':
    case 'mediaGroup':
      return all(' ');
    case 'media':
    case 'mediaInline': {
      const name = attr('alt') || attr('name');
      return `[${attr('type') === 'file' || node.type === 'mediaInline' ? 'attachment' : 'image'}${name === '' ? '' : `: ${name}`}]`;
    }
    case 'blockquote':
      return `> ${all('\n> ')}`;
    case 'bulletList':
    case 'orderedList': {
      const ordered = node.type === 'orderedList';
      const start = ordered ? Number(node.attrs?.order) || 1 : 1;
      return content.map((item, i) => convertNode(item, { ordered, order: start + i })).join('\n');
    }
    case 'listItem': {
      const symbol = list?.ordered === true ? `${list.order}.` : '*';
      return `  ${symbol} ${content.map((n) => convertNode(n).trimEnd()).join(' ')}`;
    }
    case 'codeBlock': {
      const language = node.attrs?.language === undefined ? '' : ` ${attr('language')}`;
      return `\`\`\`${language}\n${all('\n')}\n\`\`\``;
    }
    case 'rule':
      return '\n\n---\n';
    case 'emoji':
      return attr('shortName');
    case 'table':
      return all('');
    case 'tableRow': {
      const headers = content.filter((c) => c.type === 'tableHeader').length;
      const cells = all('');
      return `|${cells}${headers > 0 ? `\n${'|:-:'.repeat(headers)}|\n` : '\n'}`;
    }
    case 'tableHeader':
    case 'tableCell':
      return `${all('')}|`;
    default:
      // A type this code does not know: what is inside it, or its text attribute when inline.
      return content.length > 0 ? all(node.type.endsWith('Item') ? '' : '\n\n') : attr('text');
  }
}

/** A string or number attribute as text; anything else (an object from a broken document) as ''. */
function scalar(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
}

function withMarks(node: AdfNode): string {
  let text = node.text ?? '';
  for (const mark of node.marks ?? []) {
    if (mark.type === 'code') text = `\`${text}\``;
    else if (mark.type === 'em') text = `_${text}_`;
    else if (mark.type === 'link') {
      const href = safeHref(mark.attrs?.href);
      if (href !== undefined) text = `[${text}](${href})`;
    } else if (mark.type === 'strike') text = `~~${text}~~`;
    else if (mark.type === 'strong') text = `**${text}**`;
  }
  return text;
}

/** Markdown of an ADF document (`{ type: 'doc', version: 1 }`); throws for anything else. */
export function adfDocumentToMarkdown(doc: unknown): string {
  const root = doc as AdfNode & { version?: unknown };
  if (typeof doc !== 'object' || doc === null || root.type !== 'doc' || root.version !== 1) {
    throw new Error('not an ADF document');
  }
  return convertNode(root);
}
