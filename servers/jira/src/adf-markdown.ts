/**
 * ADF → Markdown. A port of adf-to-md 1.2.1 by Julian Lam (MIT,
 * https://github.com/julianlam/adf-to-md), the same output for the same documents. Ported, not
 * depended on: the package declares an ESLint config as a runtime dependency (33 MB of linters in
 * the production image), logs every unknown node to the console (stdout is the protocol on stdio)
 * and numbers ordered lists by mutating its input.
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
    case 'embedCard':
      return `[${attr('url')}](${attr('url')})`;
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
      // Not expressible in Markdown (media, mentions, panels…): dropped.
      return '';
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
    else if (mark.type === 'link') text = `[${text}](${scalar(mark.attrs?.href)})`;
    else if (mark.type === 'strike') text = `~~${text}~~`;
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
