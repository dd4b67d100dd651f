import { HOSTILE_MARKER, HOSTILE_TEXT, sweepRoads } from '@gatehouse/testkit';
import type { Road } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectJira, startFake } from './helpers.ts';
import type { JiraHarness } from './helpers.ts';

// One invariant over every answer of every road, in both views (text only, and with structured
// content), JSON texts decoded: no character that hides text or drives a terminal, and every
// string a Jira user or admin wrote is inside an untrusted-data frame — or belongs to a closed
// set checked against Jira's documented format (a project key, an issue key). The hostile text
// sits in every field people write: a project's name, an issue's summary, description, labels
// and comment, a person's display name, an issue type's name, a custom field's name and its
// options. Roads found and tested: every tool (the writes' dry runs included), the three
// resources, every prompt.

const ROADS: Road[] = [
  { kind: 'tool', name: 'jira_get_issue', arguments: { key: 'OPS-1' } },
  { kind: 'tool', name: 'jira_search_issues', arguments: { project: 'OPS' } },
  {
    kind: 'tool',
    name: 'jira_create_issue',
    arguments: { project: 'OPS', type: 'Task', summary: 'A task', dry_run: true },
  },
  {
    kind: 'tool',
    name: 'jira_update_issue',
    arguments: { key: 'OPS-1', summary: 'Renamed', dry_run: true },
  },
  {
    kind: 'tool',
    name: 'jira_add_comment',
    arguments: { key: 'OPS-1', body: 'ok', dry_run: true },
  },
  {
    kind: 'tool',
    name: 'jira_transition_issue',
    arguments: { key: 'OPS-1', to: 'start progress', dry_run: true },
  },
  { kind: 'resource', uri: 'jira://projects' },
  { kind: 'resource', uri: 'jira://project/OPS/createmeta' },
  { kind: 'resource', uri: 'jira://project/OPS/statuses' },
  { kind: 'resources', name: 'resources/list' },
  { kind: 'prompt', name: 'jira_triage_issue', arguments: { key: 'OPS-1' } },
  { kind: 'prompt', name: 'jira_summarise', arguments: { project: 'OPS' } },
  { kind: 'prompt', name: 'jira_write_bug_report', arguments: { project: 'OPS', problem: 'x' } },
];

let fake: JiraFake;
const views: Array<[string, JiraHarness]> = [];
const adf = (text: string) => ({
  type: 'doc' as const,
  version: 1 as const,
  content: [{ type: 'paragraph', content: [{ type: 'text', text }] }],
});

beforeAll(async () => {
  fake = await startFake();
  const ops = fake.world.projects.find((p) => p.key === 'OPS')!;
  ops.name = HOSTILE_TEXT;
  ops.issueTypes.push({ id: '10099', name: HOSTILE_TEXT });
  ops.customFields = [
    ...(ops.customFields ?? []),
    { id: 'customfield_10666', name: HOSTILE_TEXT, options: [HOSTILE_TEXT] },
  ];
  const person = fake.world.users[0]!;
  person.displayName = HOSTILE_TEXT;
  const issue = fake.issue('OPS-1');
  issue.summary = HOSTILE_TEXT;
  issue.description = adf(HOSTILE_TEXT);
  issue.labels = [...issue.labels, `${HOSTILE_MARKER}-label`];
  issue.assignee = person.accountId;
  issue.comments.push({
    id: '90666',
    author: person.accountId,
    body: adf(HOSTILE_TEXT),
    created: '2025-03-01T00:00:00.000+0000',
  });
  const env = { GATEHOUSE_ENABLE_WRITES: 'true' };
  views.push(['text', await connectJira(fake, { ...env, GATEHOUSE_STRUCTURED_OUTPUT: 'false' })]);
  views.push([
    'structured',
    await connectJira(fake, { ...env, GATEHOUSE_STRUCTURED_OUTPUT: 'true' }),
  ]);
});

afterAll(async () => {
  for (const [, h] of views) await h.close();
  await fake?.close();
});

describe('every answer of every road, in both views', () => {
  it('holds no hiding character and no Jira text outside a frame', async () => {
    const { problems, arrived } = await sweepRoads(views, ROADS);
    expect(problems).toEqual([]);
    // The hostile text reached the model on many roads: the oracle had something to look at.
    expect(arrived).toBeGreaterThan(ROADS.length / 2);
  });
});
