import { redirectMatrix, travel } from '@gatehouse/testkit';
import type { Road } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectJira, startFake } from './helpers.ts';
import type { JiraHarness } from './helpers.ts';

// Redirects and answers that are not Jira's JSON, on every road. Roads tested: every tool (reads
// and writes), the projects resource and the project templates, every prompt; redirects 301,
// 302, 303, 307 and 308 to a project outside JIRA_PROJECTS on the same site and to another host;
// HTML pages with 200, 401 and 503. No write follows a redirect; a read follows one only to an
// allowed project's issue or project path on the configured site.

const ROADS: Road[] = [
  { kind: 'tool', name: 'jira_get_issue', arguments: { key: 'OPS-1' } },
  { kind: 'tool', name: 'jira_search_issues', arguments: { project: 'OPS' } },
  {
    kind: 'tool',
    name: 'jira_create_issue',
    arguments: { project: 'OPS', type: 'Task', summary: 'Redirected?' },
    write: true,
  },
  {
    kind: 'tool',
    name: 'jira_update_issue',
    arguments: { key: 'OPS-1', summary: 'Renamed?' },
    write: true,
  },
  {
    kind: 'tool',
    name: 'jira_add_comment',
    arguments: { key: 'OPS-1', body: 'followed?' },
    write: true,
  },
  {
    kind: 'tool',
    name: 'jira_transition_issue',
    arguments: { key: 'OPS-1', to: 'start progress' },
    write: true,
  },
  { kind: 'resource', uri: 'jira://projects' },
  { kind: 'resource', uri: 'jira://project/OPS/createmeta' },
  { kind: 'resource', uri: 'jira://project/OPS/statuses' },
  { kind: 'prompt', name: 'jira_triage_issue', arguments: { key: 'OPS-1' } },
  { kind: 'prompt', name: 'jira_summarise', arguments: { project: 'OPS' } },
  {
    kind: 'prompt',
    name: 'jira_write_bug_report',
    arguments: { project: 'OPS', problem: 'Login fails' },
  },
];

let fake: JiraFake;
let h: JiraHarness;

beforeAll(async () => {
  fake = await startFake();
  h = await connectJira(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});

afterAll(async () => {
  await h?.close();
  await fake?.close();
});

const state = () => JSON.stringify(fake.world.issues);

describe('a redirect on every road', () => {
  it('is never followed by a write, nor by a read out of the allowed projects or the site', async () => {
    const { problems, asked, cells } = await redirectMatrix({
      client: h.client,
      fake,
      roads: ROADS,
      inside: '/rest/api/3/issue/HR-1/comment',
      state,
    });
    expect(problems).toEqual([]);
    expect(asked).toBeGreaterThan(cells / 2);
  }, 120_000);

  it('lets a read follow one to an allowed project on the same site', async () => {
    fake.fail({
      status: 301,
      redirect: `${fake.url}/rest/api/3/issue/WEB-1`,
      match: 'GET /rest/api/3/issue/OPS-1',
    });
    const read = await travel(h.client, ROADS[0]!);
    fake.clearFailures();
    expect(read.error, read.text).toBe(false);
    expect(read.text).toContain('WEB-1');
  });
});

describe('an answer that is not Jira’s JSON', () => {
  const PAGE = '<!doctype html><title>Atlassian</title><script>steal()</script>';

  it.each([200, 401, 503])(
    'with status %i is never read nor quoted, on any road',
    async (status) => {
      for (const road of ROADS) {
        fake.fail({ status, page: { contentType: 'text/html', body: PAGE }, times: 1_000 });
        const before = state();
        const answer = await travel(h.client, road);
        fake.clearFailures();
        expect(state()).toBe(before);
        expect(answer.text).not.toMatch(/doctype|<script|steal/i);
      }
    },
  );
});
