import { describe, expect, it } from 'vitest';
import { JqlError, jiraSeed, jqlInstant, matches, parseJql, startJiraFake } from '../src/jira.js';
import type { JiraFake } from '../src/jira.js';

// The fake's JQL is only worth testing injection against if it parses and evaluates like Jira.

const issue = (values: Record<string, Array<string | null>>) => (field: string) => values[field];

describe('the Jira fake’s JQL', () => {
  it('parses into the shape of Jira’s /jql/parse answer', () => {
    expect(
      parseJql('project in (OPS, "AND") AND status != Done ORDER BY updated DESC, key'),
    ).toEqual({
      where: {
        operator: 'and',
        clauses: [
          {
            field: { name: 'project' },
            operator: 'in',
            operand: { values: [{ value: 'OPS' }, { value: 'AND' }] },
          },
          { field: { name: 'status' }, operator: '!=', operand: { value: 'Done' } },
        ],
      },
      orderBy: {
        fields: [{ field: { name: 'updated' }, direction: 'desc' }, { field: { name: 'key' } }],
      },
    });
  });

  it('reads escapes inside quotes, and refuses an unclosed quote or trailing tokens', () => {
    expect(parseJql('summary ~ "a \\"quoted\\" word"').where).toMatchObject({
      operand: { value: 'a "quoted" word' },
    });
    expect(() => parseJql('summary ~ "open')).toThrow(JqlError);
    expect(() => parseJql('labels = a labels = b')).toThrow(/Expecting either 'OR' or 'AND'/);
  });

  it('evaluates AND, OR, NOT, IN, IS EMPTY, ~ and currentUser()', () => {
    const values = issue({
      project: ['ops'],
      labels: ['db', 'incident'],
      assignee: [null],
      summary: ['disk full on db-7'],
      reporter: ['557058:me'],
    });
    const run = (jql: string) => matches(parseJql(jql).where!, values, '557058:me');
    expect(run('project = OPS AND labels in (incident)')).toBe(true);
    expect(run('project = OPS AND NOT labels = db')).toBe(false);
    expect(run('assignee IS EMPTY OR project = HR')).toBe(true);
    expect(run('summary ~ "disk full"')).toBe(true);
    expect(run('reporter = currentUser()')).toBe(true);
    expect(() => run('nosuchfield = 1')).toThrow(/does not exist/);
  });
});

describe('the ADF check', () => {
  it('accepts a valid document and names what is wrong with an invalid one', async () => {
    const { validateAdf } = await import('../src/jira.js');
    expect(
      validateAdf({
        type: 'doc',
        version: 1,
        content: [{ type: 'paragraph', content: [{ type: 'text', text: 'hi' }] }],
      }),
    ).toEqual([]);
    expect(
      validateAdf({
        type: 'doc',
        version: 1,
        content: [{ type: 'paragraph', content: [{ type: 'text' }] }],
      }).length,
    ).toBeGreaterThan(0);
    expect(validateAdf('plain text').length).toBeGreaterThan(0);
  });
});

describe('the Jira fake is as strict as Jira Cloud', () => {
  it('compares created by instant: a period relative to now, or a date in the user’s zone (UTC)', () => {
    const now = Date.parse('2026-12-03T12:00:00Z');
    expect(jqlInstant('-10m', 'created', now)).toBe(now - 600_000);
    expect(jqlInstant('-4w 2d', 'created', now)).toBe(now - 30 * 86_400_000);
    expect(jqlInstant('2026/12/01 08:30', 'created', now)).toBe(Date.parse('2026-12-01T08:30:00Z'));
    expect(() => jqlInstant('yesterday', 'created', now)).toThrow(
      /Date value 'yesterday' for field 'created' is invalid/,
    );
    const recent = issue({
      created: [new Date(Date.now() - 300_000).toISOString().replace('Z', '+0000')],
    });
    expect(matches(parseJql('created >= "-10m"').where!, recent, 'me')).toBe(true);
    expect(matches(parseJql('created >= "-1m"').where!, recent, 'me')).toBe(false);
  });

  it('searches an entity property only when an app declared its index', async () => {
    // developer.atlassian.com/cloud/jira/platform/jira-entity-properties/: a REST client can
    // set and read properties, but only an app's declaration makes one searchable by JQL.
    const world = jiraSeed();
    world.issues[0]!.properties = { gatehouse: { key: 'k1' } };
    const search = async (fake: JiraFake, jql: string) =>
      fetch(`${fake.url}/rest/api/3/search/jql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Basic ${Buffer.from('bot@acme.example:t0ken').toString('base64')}`,
        },
        body: JSON.stringify({ jql, properties: ['gatehouse'], fields: ['summary'] }),
      });
    const credentials = [{ email: 'bot@acme.example', token: 't0ken', accountId: 'bot' }];
    const unindexed = await startJiraFake({ world, credentials });
    const indexed = await startJiraFake({ world, credentials, indexedProperties: ['gatehouse'] });
    try {
      const refused = await search(unindexed, 'issue.property[gatehouse].key = "k1"');
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain(
        "Field 'issue.property[gatehouse].key' does not exist or you do not have permission to view it.",
      );
      const found = await search(indexed, 'issue.property[gatehouse].key = "k1"');
      expect(found.status).toBe(200);
      // Read back with the results either way (`properties`), which is what the server relies on.
      const all = (await (await search(unindexed, `key = ${world.issues[0]!.key}`)).json()) as {
        issues: Array<{ properties?: Record<string, unknown> }>;
      };
      expect(all.issues[0]!.properties).toEqual({ gatehouse: { key: 'k1' } });
    } finally {
      await unindexed.close();
      await indexed.close();
    }
  });
});
