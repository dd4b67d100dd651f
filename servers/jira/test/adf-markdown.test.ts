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
  it('converts as adf-to-md did, and leaves the input alone', () => {
    const before = JSON.stringify(DOC);
    const log = vi.spyOn(console, 'log');
    expect(adfDocumentToMarkdown(DOC)).toBe(
      '## Title\n\na **bold** [link](https://x.y)\n\n  * one\n  * two\n\n  5. five\n  6. six\n\n``` js\nlet x = 1;\n```\n\n> q1\n> q2\n\n[image]\n\n|h|\n|:-:|\n|c|\n',
    );
    expect(JSON.stringify(DOC)).toBe(before);
    expect(log).not.toHaveBeenCalled();
  });

  it('renders every node a person reads: mentions, dates, status, panels, expands, tasks', () => {
    const doc = {
      type: 'doc',
      version: 1,
      content: [
        p(
          t('Ask '),
          { type: 'mention', attrs: { id: '557058:alice', text: '@Alice Adams' } },
          t(' to review by '),
          { type: 'date', attrs: { timestamp: String(Date.UTC(2026, 11, 24)) } },
          t(', '),
          { type: 'status', attrs: { text: 'IN REVIEW', color: 'blue' } },
          t(' '),
          { type: 'emoji', attrs: { shortName: ':tada:', text: '🎉' } },
        ),
        { type: 'panel', attrs: { panelType: 'warning' }, content: [p(t('Freeze on Friday'))] },
        {
          type: 'expand',
          attrs: { title: 'Runbook' },
          content: [{ type: 'nestedExpand', attrs: { title: 'Step 1' }, content: [p(t('drain'))] }],
        },
        {
          type: 'taskList',
          content: [
            { type: 'taskItem', attrs: { state: 'DONE', localId: 'a' }, content: [t('backup')] },
            { type: 'taskItem', attrs: { state: 'TODO', localId: 'b' }, content: [t('restore')] },
          ],
        },
        {
          type: 'decisionList',
          content: [{ type: 'decisionItem', attrs: { state: 'DECIDED' }, content: [t('ship it')] }],
        },
        {
          type: 'layoutSection',
          content: [
            { type: 'layoutColumn', content: [p(t('left'))] },
            { type: 'layoutColumn', content: [p(t('right'))] },
          ],
        },
        {
          type: 'bodiedExtension',
          attrs: { extensionKey: 'x' },
          content: [p(t('inside an extension'))],
        },
        { type: 'someFutureContainer', content: [p(t('still read'))] },
        p({ type: 'someFutureInline', attrs: { text: 'inline text' } }),
      ],
    };
    expect(adfDocumentToMarkdown(doc)).toBe(
      [
        'Ask @Alice Adams to review by 2026-12-24, [IN REVIEW] :tada:',
        '> **Warning:** Freeze on Friday',
        '**Runbook**\n\n**Step 1**\n\ndrain',
        '  - [x] backup\n  - [ ] restore',
        '  - Decision: ship it',
        'left\n\nright',
        'inside an extension',
        'still read',
        'inline text',
      ].join('\n\n'),
    );
  });

  it('reads links with the schemes written links may have, and any other as its text', () => {
    const link = (href: string) => t('click', [{ type: 'link', attrs: { href } }]);
    const doc = {
      type: 'doc',
      version: 1,
      content: [
        p(
          link('javascript:alert(1)'),
          t(' '),
          link('https://ok.example/a b(c)'),
          t(' '),
          link('mailto:a@b.example'),
        ),
        p({ type: 'inlineCard', attrs: { url: 'data:text/html,<script>x</script>' } }),
        p(link(' JavaScript:alert(2)')),
      ],
    };
    expect(adfDocumentToMarkdown(doc)).toBe(
      'click [click](https://ok.example/a%20b%28c%29) [click](mailto:a@b.example)\n\ndata:text/html,<script>x</script>\n\nclick',
    );
  });

  it('refuses what is not an ADF document', () => {
    for (const bad of [null, 'text', { type: 'paragraph' }, { type: 'doc', version: 2 }]) {
      expect(() => adfDocumentToMarkdown(bad)).toThrow('not an ADF document');
    }
  });
});
