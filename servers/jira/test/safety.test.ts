import { unframed } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectJira, expectNoSchemaDrift, keys, startFake, text } from './helpers.ts';
import type { JiraHarness } from './helpers.ts';

// The project allow-list on every path, and JQL from the model that cannot reach another project
// — against the fake's real JQL evaluation, so a hole would show as HR-1 in the results.

let fake: JiraFake;
let h: JiraHarness;
beforeAll(async () => {
  fake = await startFake();
  h = await connectJira(fake);
});
afterAll(async () => {
  await h?.close();
  expectNoSchemaDrift();
  await fake?.close();
});
const search = (args: Record<string, unknown>) =>
  h.client.callTool({ name: 'jira_search_issues', arguments: args });

describe('JQL from the model never leaves the allowed projects', () => {
  it.each([
    ['an OR that widens the scope', 'labels = incident OR labels = confidential'],
    ['naming a project', 'project = HR'],
    ['a project in a list', 'project in (HR, OPS)'],
    ['a key of another project', 'key = HR-1 OR key = OPS-1'],
    ['closing a quote in a value', 'summary ~ "x" ) OR project = HR OR (summary ~ "y"'],
    ['a smuggled ORDER BY', 'labels = drill ORDER BY key) OR project = HR'],
    ['NOT around the scope', 'NOT labels = nothing'],
    [
      'a value with a backslash and quote',
      'summary ~ "Salary\\" OR project = HR OR summary ~ \\"x"',
    ],
    ['an empty condition that matches all', 'assignee IS EMPTY OR assignee IS NOT EMPTY'],
  ])('%s', async (_, jql) => {
    const result = await search({ jql });
    expect(keys(result)).not.toContain('HR-1');
    const sent = fake.queries.at(-1) ?? '';
    if (!result.isError)
      expect(sent.startsWith('project IN ("OPS", "WEB", "AND") AND (')).toBe(true);
    expect(JSON.stringify(result)).not.toMatch(/Salary review/);
  });

  it('refuses JQL Jira cannot parse, with Jira’s words, and sends no search', async () => {
    const before = fake.queries.length;
    const result = await search({ jql: 'summary ~ "unclosed' });
    expect(text(result)).toMatch(/^Jira refused the JQL: .*quoted string/);
    expect(fake.queries.length).toBe(before);
  });

  it('keeps the model’s ORDER BY, checked, inside the scope', async () => {
    const result = await search({ jql: 'labels in (drill, incident) ORDER BY key ASC' });
    expect(keys(result)).toEqual(['OPS-1', 'OPS-2']);
    expect(fake.queries.at(-1)).toBe(
      'project IN ("OPS", "WEB", "AND") AND (labels IN ("drill", "incident")) ORDER BY key ASC',
    );
  });

  it('allows harmless functions and ORDER BY project inside the scope', async () => {
    expect(keys(await search({ jql: 'fixVersion in unreleasedVersions()' }))).toEqual(['OPS-1']);
    expect(keys(await search({ jql: 'fixVersion in unreleasedVersions("OPS")' }))).toEqual([
      'OPS-1',
    ]);
    expect(keys(await search({ jql: 'sprint in openSprints() ORDER BY key' }))).toEqual([
      'OPS-1',
      'OPS-2',
    ]);
    expect(keys(await search({ jql: 'sprint in futureSprints()' }))).toEqual([]);
    expect((await search({ jql: 'issuetype in standardIssueTypes()' })).isError).toBeFalsy();
    const ordered = await search({ jql: 'labels is not empty ORDER BY project, key' });
    expect(ordered.isError).toBeFalsy();
    expect(fake.queries.at(-1)).toMatch(/ORDER BY project, key$/);
  });

  it('refuses a function naming a project outside the scope, and ORDER BY category', async () => {
    const before = fake.queries.length;
    const hr = await search({ jql: 'fixVersion in unreleasedVersions("HR")' });
    expect(text(hr)).toMatch(/unreleasedVersions\(\) may name only this server's projects/);
    expect(text(await search({ jql: 'labels = x ORDER BY category' }))).toMatch(
      /may not name category/,
    );
    expect(fake.queries.length).toBe(before);
  });

  it('keeps the words "and", "or" and "not" in a free-text search', async () => {
    await search({ text: 'rollback AND restore or NOT' });
    expect(fake.queries.at(-1)).toContain('text ~ "rollback and restore or not"');
  });

  it('quotes every value, so a reserved-word project key works', async () => {
    expect(keys(await search({ project: 'AND' }))).toEqual(['AND-1']);
    expect(fake.queries.at(-1)).toBe('project IN ("AND") ORDER BY updated DESC');
  });
});

describe('the project allow-list, before any request', () => {
  it.each([
    ['a project filter outside the list', 'jira_search_issues', { project: 'HR' }],
    ['an issue of another project', 'jira_get_issue', { key: 'HR-1' }],
  ])('refuses %s', async (_, name, args) => {
    const before = fake.requests.length;
    const result = await h.client.callTool({ name, arguments: args });
    expect(text(result)).toMatch(/is not one of this server's projects \(OPS, WEB, AND\)/);
    expect(fake.requests.length).toBe(before);
    expect(h.records.at(-1)!.policy?.rule).toBe('jira_project_allow_list');
  });

  it('refuses an issue whose key moved out of the allowed projects, never naming where to', async () => {
    const newKey = fake.move('WEB-1', 'HR');
    const result = await h.client.callTool({ name: 'jira_get_issue', arguments: { key: 'WEB-1' } });
    expect(text(result)).toMatch(/^WEB-1 moved out of this server's projects \(/);
    expect(text(result)).not.toContain(newKey);
    expect(text(result)).not.toMatch(/\bHR\b/);
    expect(JSON.stringify(h.records.at(-1))).not.toContain(newKey);
    fake.settle(); // search sees the move once it reaches the index
    expect(keys(await search({}))).not.toContain('WEB-1');
  });

  it('narrows further with GATEHOUSE_ALLOW_TARGETS', async () => {
    const narrow = await connectJira(fake, { GATEHOUSE_ALLOW_TARGETS: 'jira:OPS' });
    try {
      const result = await narrow.client.callTool({ name: 'jira_search_issues', arguments: {} });
      expect(keys(result).every((k) => k.startsWith('OPS-'))).toBe(true);
    } finally {
      await narrow.close();
    }
  });
});

describe('what Jira holds, read through the default text view', () => {
  it('every node a person reads is there, and a non-web link is text', async () => {
    const plain = await connectJira(fake, { GATEHOUSE_STRUCTURED_OUTPUT: 'false' });
    try {
      const t = (text: string, marks?: unknown[]) => ({
        type: 'text',
        text,
        ...(marks ? { marks } : {}),
      });
      fake.issue('OPS-3').description = {
        type: 'doc',
        version: 1,
        content: [
          {
            type: 'paragraph',
            content: [
              t('Ask '),
              { type: 'mention', attrs: { id: '557058:alice', text: '@Alice Adams' } },
              t(' to review by '),
              { type: 'date', attrs: { timestamp: String(Date.UTC(2026, 11, 24)) } },
              t(' '),
              { type: 'status', attrs: { text: 'BLOCKED', color: 'red' } },
              t(' '),
              t('here', [{ type: 'link', attrs: { href: 'javascript:alert(document.cookie)' } }]),
            ],
          },
          {
            type: 'panel',
            attrs: { panelType: 'note' },
            content: [{ type: 'paragraph', content: [t('Ignore the checklist')] }],
          },
          {
            type: 'taskList',
            attrs: { localId: 'l' },
            content: [
              {
                type: 'taskItem',
                attrs: { localId: 'i', state: 'TODO' },
                content: [t('page the DBA')],
              },
            ],
          },
        ],
      };
      const result = await plain.client.callTool({
        name: 'jira_get_issue',
        arguments: { key: 'OPS-3' },
      });
      expect(unframed(result.structuredContent)).toBeUndefined();
      const said = text(result);
      expect(said).toContain('Ask @Alice Adams to review by 2026-12-24 [BLOCKED] here');
      expect(said).toContain('**Note:** Ignore the checklist');
      expect(said).toContain('- [ ] page the DBA');
      expect(said).not.toContain('javascript:');
    } finally {
      await plain.close();
    }
  });
});
