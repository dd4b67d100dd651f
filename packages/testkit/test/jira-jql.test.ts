import { describe, expect, it } from 'vitest';
import { JqlError, matches, parseJql } from '../src/jira.js';

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
