// The ported ADF → Markdown converter (src/adf-markdown.ts): the output adf-to-md 1.2.1 gave for
// the same document (checked against the package before it was dropped), without its side effects.
import { describe, expect, it, vi } from 'vitest';
import { adfDocumentToMarkdown } from '../src/adf-markdown.ts';

const t = (text: string, marks?: Array<{ type: string; attrs?: { href: string } }>) => ({
  type: 'text',
  text,
  ...(marks ? { marks } : {}),
});
const p = (...content: unknown[]) => ({ type: 'paragraph', content });
const item = (text: string) => ({ type: 'listItem', content: [p(t(text))] });

const DOC = {
  type: 'doc',
  version: 1,
  content: [
    { type: 'heading', attrs: { level: 2 }, content: [t('Title')] },
    p(
      t('a '),
      t('bold', [{ type: 'strong' }]),
      t(' '),
      t('link', [{ type: 'link', attrs: { href: 'https://x.y' } }]),
    ),
    { type: 'bulletList', content: [item('one'), item('two')] },
    { type: 'orderedList', attrs: { order: 5 }, content: [item('five'), item('six')] },
    { type: 'codeBlock', attrs: { language: 'js' }, content: [t('let x = 1;')] },
    { type: 'blockquote', content: [p(t('q1')), p(t('q2'))] },
    { type: 'mediaSingle', content: [{ type: 'media', attrs: { id: 'x' } }] },
    {
      type: 'table',
      content: [
        { type: 'tableRow', content: [{ type: 'tableHeader', content: [p(t('h'))] }] },
        { type: 'tableRow', content: [{ type: 'tableCell', content: [p(t('c'))] }] },
      ],
    },
  ],
};

describe('ADF to Markdown', () => {
  it('converts as adf-to-md did, drops what Markdown cannot carry, and leaves the input alone', () => {
    const before = JSON.stringify(DOC);
    const log = vi.spyOn(console, 'log');
    expect(adfDocumentToMarkdown(DOC)).toBe(
      '## Title\n\na **bold** [link](https://x.y)\n\n  * one\n  * two\n\n  5. five\n  6. six\n\n``` js\nlet x = 1;\n```\n\n> q1\n> q2\n\n\n\n|h|\n|:-:|\n|c|\n',
    );
    expect(JSON.stringify(DOC)).toBe(before);
    expect(log).not.toHaveBeenCalled();
  });

  it('refuses what is not an ADF document', () => {
    for (const bad of [null, 'text', { type: 'paragraph' }, { type: 'doc', version: 2 }]) {
      expect(() => adfDocumentToMarkdown(bad)).toThrow('not an ADF document');
    }
  });
});
