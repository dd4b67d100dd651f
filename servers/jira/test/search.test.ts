import { unframed } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectJira, expectNoSchemaDrift, keys, startFake, text } from './helpers.ts';
import type { JiraHarness } from './helpers.ts';

// Search and get through a real MCP client, both eras, against a fake that really evaluates JQL.

describe.each(['legacy', 'modern'] as const)('the Jira server (%s era)', (era) => {
  let fake: JiraFake;
  let h: JiraHarness;
  beforeAll(async () => {
    fake = await startFake();
    h = await connectJira(fake, {}, era);
  });
  afterAll(async () => {
    await h?.close();
    expectNoSchemaDrift();
    await fake?.close();
  });
  const search = (args: Record<string, unknown>) =>
    h.client.callTool({ name: 'jira_search_issues', arguments: args });

  it('searches only the allowed projects, newest update first', async () => {
    const result = await search({});
    expect(keys(result)).toEqual(['OPS-2', 'OPS-1', 'WEB-1', 'OPS-3', 'AND-1']);
    expect((unframed(result.structuredContent) as { jql: string }).jql).toBe(
      'project IN ("OPS", "WEB", "AND") ORDER BY updated DESC',
    );
    expect(text(result)).toMatch(/untrusted-data-/);
  });

  it('filters by status category, people (me, unassigned, a name), labels, type, priority, dates, words', async () => {
    expect(keys(await search({ status_category: 'In Progress' }))).toEqual(['OPS-2']);
    expect(keys(await search({ assignee: 'me' }))).toEqual(['OPS-2']);
    expect(keys(await search({ assignee: 'unassigned' }))).toEqual(['WEB-1', 'OPS-3', 'AND-1']);
    expect(keys(await search({ assignee: 'Alice Adams' }))).toEqual(['OPS-1']);
    expect(keys(await search({ reporter: 'alice@acme.example' }))).toEqual(['OPS-2', 'WEB-1']);
    expect(keys(await search({ labels: ['incident'] }))).toEqual(['OPS-2']);
    expect(keys(await search({ type: 'Bug', priority: ['Low'] }))).toEqual(['WEB-1']);
    expect(keys(await search({ updated_since: '2026-11-05' }))).toEqual(['OPS-2', 'OPS-1']);
    expect(keys(await search({ text: 'failover drill' }))).toEqual(['OPS-1']);
    expect(keys(await search({ project: 'and' }))).toEqual(['AND-1']);
  });

  it('says clearly when a person is unknown or ambiguous', async () => {
    expect(text(await search({ assignee: 'Zed' }))).toBe(
      'No Jira user matches "Zed" for assignee.',
    );
    const ambiguous = text(await search({ assignee: 'acme' }));
    expect(ambiguous).toMatch(
      /^"acme" matches several people for assignee: Alice Adams, Bob Brown/,
    );
    // Carol may browse HR only, outside this server's projects: never named, not even here.
    expect(ambiguous).not.toContain('Carol');
    expect(text(await search({ assignee: 'Carol Confidential' }))).toBe(
      'No Jira user matches "Carol Confidential" for assignee.',
    );
  });

  it('pages with a cursor bound to its query', async () => {
    const first = await search({ limit: 2 });
    const { next_cursor } = unframed(first.structuredContent) as { next_cursor?: string };
    expect(keys(first)).toEqual(['OPS-2', 'OPS-1']);
    expect(next_cursor).toBeDefined();
    expect(keys(await search({ limit: 2, cursor: next_cursor }))).toEqual(['WEB-1', 'OPS-3']);
    expect(text(await search({ limit: 2, cursor: next_cursor, labels: ['x'] }))).toMatch(
      /cursor belongs to another search/,
    );
  });

  it('gets an issue with its description and comments as Markdown', async () => {
    const result = await h.client.callTool({ name: 'jira_get_issue', arguments: { key: 'ops-1' } });
    expect(unframed(result.structuredContent)).toMatchObject({
      issue: {
        key: 'OPS-1',
        status: 'To Do',
        assignee: 'Alice Adams',
        url: `${fake.url}/browse/OPS-1`,
      },
      description: 'Run the **drill** on Friday.',
      comments: [{ author: 'Bob Brown', body: 'Scheduled for 14:00.' }],
      comments_total: 1,
      subtasks: [{ key: 'OPS-3', summary: 'Check replica lag', status: 'To Do' }],
      links: [{ relation: 'is blocked by', key: 'OPS-2' }],
      transitions: ['In Progress', 'Done'],
    });
    // OPS-2 also relates to HR-1, outside the projects: counted, never shown.
    const blocker = await h.client.callTool({
      name: 'jira_get_issue',
      arguments: { key: 'OPS-2' },
    });
    expect(unframed(blocker.structuredContent)).toMatchObject({
      links: [{ relation: 'blocks', key: 'OPS-1' }],
      links_hidden: 1,
    });
    expect(JSON.stringify(blocker)).not.toContain('Salary');
    // Only the parts asked for: no comments or transitions request.
    const before = fake.requests.length;
    const lean = await h.client.callTool({
      name: 'jira_get_issue',
      arguments: { key: 'OPS-1', include: ['description'] },
    });
    expect(unframed(lean.structuredContent)).toMatchObject({
      comments: [],
      transitions: [],
      links: [],
      subtasks: [],
    });
    expect(fake.requests.slice(before)).toEqual([
      expect.stringMatching(/^GET \/rest\/api\/3\/issue\/OPS-1\?/),
    ]);
  });

  it('serves the projects and each project’s create metadata, completed from the allow-list', async () => {
    const { resources } = await h.client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([
      'jira://projects',
      'jira://project/OPS/createmeta',
      'jira://project/WEB/createmeta',
      'jira://project/AND/createmeta',
      'jira://project/OPS/statuses',
      'jira://project/WEB/statuses',
      'jira://project/AND/statuses',
    ]);
    const statuses = await h.client.readResource({ uri: 'jira://project/OPS/statuses' });
    expect((statuses.contents[0] as { text: string }).text).toContain('"category": "In Progress"');
    const meta = await h.client.readResource({ uri: 'jira://project/OPS/createmeta' });
    // (Names and values admins wrote come framed, value by value: compared without the frames.)
    const types = unframed(JSON.parse((meta.contents[0] as { text: string }).text)) as Array<{
      type: string;
      fields: Array<{ field: string; allowed?: string[] }>;
    }>;
    expect(types.map((t) => t.type)).toEqual(['Bug', 'Task', 'Sub-task']);
    expect(types[0]!.fields.find((f) => f.field === 'priority')?.allowed).toContain('High');
    const before = fake.requests.length;
    await expect(h.client.readResource({ uri: 'jira://project/HR/createmeta' })).rejects.toThrow();
    await expect(h.client.readResource({ uri: 'jira://project/HR/statuses' })).rejects.toThrow();
    const none = await h.client.complete({
      ref: { type: 'ref/resource', uri: 'jira://project/{project}/createmeta' },
      argument: { name: 'project', value: 'H' },
    });
    expect(none.completion.values).toEqual([]);
    expect(fake.requests.length).toBe(before);
    const completion = await h.client.complete({
      ref: { type: 'ref/resource', uri: 'jira://project/{project}/createmeta' },
      argument: { name: 'project', value: 'w' },
    });
    expect(completion.completion.values).toEqual(['WEB']);
  });

  it('offers triage, bug report and summary prompts, the issues embedded as data', async () => {
    const { prompts } = await h.client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual([
      'jira_triage_issue',
      'jira_write_bug_report',
      'jira_summarise',
    ]);
    const triage = await h.client.getPrompt({
      name: 'jira_triage_issue',
      arguments: { key: 'OPS-2' },
    });
    expect((triage.messages[0]!.content as { text: string }).text).toContain('Disk full on db-7');
    const report = await h.client.getPrompt({
      name: 'jira_write_bug_report',
      arguments: { project: 'WEB', problem: 'Logout button missing' },
    });
    expect((report.messages[0]!.content as { text: string }).text).toContain(
      'Issue types there: Bug, Task, Sub-task',
    );
    const summary = await h.client.getPrompt({
      name: 'jira_summarise',
      arguments: { project: 'OPS' },
    });
    const body = (summary.messages[0]!.content as { text: string }).text;
    expect(body).toContain('OPS-1');
    expect(body).not.toContain('HR-1');
    await expect(
      h.client.getPrompt({ name: 'jira_summarise', arguments: { project: 'HR' } }),
    ).rejects.toThrow(/not one of this server's projects/);
  });
});
