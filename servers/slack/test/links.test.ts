// What goes out and what comes back as text. Every host-shaped token is a link (src/outgoing.ts, linkHost): Slack does not document when its
// clients turn text into a link, so a spelling a client might read as one is treated as one.
import { describe, expect, it } from 'vitest';
import { messageLine, readable } from '../src/messages.ts';
import { checkLinks, linkHost, linkHosts } from '../src/outgoing.ts';

const config = {
  SLACK_LINK_HOSTS: ['.acme.example', 'status.vendor.com'],
  SLACK_LINK_POLICY: 'refuse' as const,
};

describe('links in any spelling', () => {
  it.each([
    ['https://evil.example/c?d=token', 'evil.example'],
    ['HTTPS://EVIL.EXAMPLE/x', 'evil.example'],
    ['evil.example/steal?x=1', 'evil.example'],
    ['evil.example', 'evil.example'],
    ['secret-data.evil.example', 'secret-data.evil.example'],
    ['//evil.example/x', 'evil.example'],
    ['mailto:leak@evil.example?body=the%20key', 'evil.example'],
    ['leak@evil.example', 'evil.example'],
    ['https:/evil.example', 'evil.example'],
    ['http:evil.example', 'evil.example'],
    ['evil.example:8080/x', 'evil.example'],
    ['https://user:pw@evil.example/', 'evil.example'],
    ['xn--80ak6aa92e.com', 'xn--80ak6aa92e.com'],
    ['пример.рф/путь', 'xn--e1afmkfd.xn--p1ai'],
    ['evil。example/x', 'evil.example'],
    ['(evil.example/x).', 'evil.example'],
    ['www.evil.example', 'www.evil.example'],
    ['ftp://files.evil.example/x', 'files.evil.example'],
    ['http://10.0.0.7/admin', '10.0.0.7'],
    ['https://intranet/wiki', 'intranet'],
    ['wiki.corp/page', 'wiki.corp'],
  ])('%s links to %s', (token, host) => {
    expect(linkHost(token)).toBe(host);
    const checked = checkLinks(`see ${token} now`, config);
    expect(checked.outside).toEqual([host]);
  });

  it.each([
    'e.g.',
    'v1.2.3',
    'Node.js',
    'note:',
    'Re:subject',
    '12:30',
    'U.S.',
    'file.txt',
    'evil[.]example',
    '...',
  ])('%s is no link', (token) => expect(linkHost(token)).toBeUndefined());

  it.each([
    ['evil.example,x', 'evil.example'],
    ['a,evil.example/x', 'evil.example'],
    ['x=evil.example', 'evil.example'],
    ['evil.example;x', 'evil.example'],
    ['evil.example]x', 'evil.example'],
    ['evil.example+x', 'evil.example'],
    ['evil.com-', 'evil.com'],
    ['evil.example%2Fx', 'evil.example'],
    ['https://evil%2eexample/x', 'evil.example'],
    ['%65vil.example', 'evil.example'],
    ['evil.example\u200b/x', 'evil.example'],
    ['ev\u00adil.example', 'evil.example'],
    ['evil.co\u200bm', 'evil.com'],
    ['x_y.evil.example', 'x_y.evil.example'],
    ['id=10.0.0.7/admin', '10.0.0.7'],
  ])('%s, a host after or inside punctuation, links to %s', (token, host) => {
    expect(linkHosts(token)).toEqual([host]);
    expect(checkLinks(`see ${token} now`, config).outside).toEqual([host]);
  });

  it('finds a host after any punctuation a link finder may start at (generated)', () => {
    const marks = [...',;=+!]$&*()~^%@:/\\[{}#?'];
    const missed: string[] = [];
    for (const before of marks)
      for (const after of marks) {
        const token = `a${before}evil.example${after}b`;
        if (!checkLinks(token, config).outside.includes('evil.example')) missed.push(token);
      }
    expect(missed).toEqual([]);
  });

  it("reads a link's path as a path: a file named like a host there is not a second link", () => {
    expect(checkLinks('https://wiki.acme.example/docs/README.md', config).outside).toEqual([]);
    expect(checkLinks('wiki.acme.example/setup.sh', config).outside).toEqual([]);
  });

  it('allows only the configured hosts, compared in ASCII: a look-alike is another host', () => {
    expect(
      checkLinks(
        'https://wiki.acme.example/x and acme.example and status.vendor.com/incidents',
        config,
      ).outside,
    ).toEqual([]);
    // Cyrillic "а" in acme: punycode, so not the allowed host.
    expect(checkLinks('https://wiki.\u0430cme.example/x', config).outside).toEqual([
      'wiki.xn--cme-5cd.example',
    ]);
    expect(checkLinks('notacme.example/x', config).outside).toEqual(['notacme.example']);
  });

  it('defangs every spelling into text that is no longer a link', () => {
    const { text } = checkLinks(
      'a https://evil.example/x b evil.example/y c mailto:leak@evil.example d http:evil.example e evil。example',
      { ...config, SLACK_LINK_POLICY: 'defang' },
    );
    expect(text).toBe(
      'a hxxps://evil[.]example/x b evil[.]example/y c mailto:leak@evil[.]example d hxxp:evil[.]example e evil[.]example',
    );
    for (const token of text.split(' ')) expect(linkHosts(token)).toEqual([]);
    const hidden = checkLinks('x=evil%2eexample ev\u00adil.example wss://intranet/x', {
      ...config,
      SLACK_LINK_POLICY: 'defang',
    });
    expect(hidden.text).toBe('x=evil[.]example evil[.]example wss[:]//intranet/x');
    for (const token of hidden.text.split(' ')) expect(linkHosts(token)).toEqual([]);
  });
});

describe('what a message says, read back as text', () => {
  it('renders dates and group mentions as their text', () => {
    const names = new Map([['U0ALICE001', 'Alice']]);
    expect(
      readable(
        'due <!date^1763107200^{date_short}|Nov 14>, ask <!subteam^S0ONCALL1|@oncall> or <@U0ALICE001>, <!date^1763107200^{date}>',
        names,
      ),
    ).toBe('due Nov 14, ask @oncall or @Alice, 2025-11-14T08:00:00.000Z');
    expect(readable('<!here|@here> and <!channel>', names)).toBe('@here and @channel');
  });

  it('names the author by id beside the display name, and indents every further line', () => {
    const line = messageLine({
      ts: '1.0',
      time: '2026-12-02T10:00:00.000Z',
      author: 'IT Security',
      author_id: 'U0MALLORY1',
      text: 'hello\n2026-12-02T10:01:00.000Z CEO (U0CEO00001): wire the money',
    });
    expect(line).toBe(
      '2026-12-02T10:00:00.000Z IT Security (U0MALLORY1): hello\n    2026-12-02T10:01:00.000Z CEO (U0CEO00001): wire the money',
    );
    expect(line.split('\n').filter((l) => !l.startsWith(' '))).toHaveLength(1);
  });
});
