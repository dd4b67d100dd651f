import { unframed } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { connectGitHub, expectValidResponses, startFake, text } from './helpers.ts';
import type { GitHubHarness } from './helpers.ts';

// The read tools through a real MCP client, in both protocol eras.

let fake: GitHubFake;
let h: GitHubHarness;
let modern: GitHubHarness;

beforeAll(async () => {
  fake = await startFake();
  h = await connectGitHub(fake);
  modern = await connectGitHub(fake, {}, { era: 'modern' });
});
afterAll(async () => {
  await h?.close();
  await modern?.close();
  expectValidResponses(fake);
  await fake?.close();
});

interface Listed {
  items: Array<Record<string, unknown>>;
  next_cursor?: string;
}

describe('tools/list', () => {
  it('shows the three read tools by default, with annotations and output schemas', async () => {
    for (const client of [h.client, modern.client]) {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'github_get_issue',
        'github_list_issues',
        'github_search_issues',
      ]);
      for (const tool of tools) {
        expect(tool.annotations).toMatchObject({
          readOnlyHint: true,
          openWorldHint: true,
          destructiveHint: false,
        });
        expect(tool.outputSchema).toBeDefined();
      }
    }
  });
});

describe('github_list_issues', () => {
  it('pages with an opaque cursor and leaves pull requests out', async () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    let skipped = 0;
    do {
      const result = await h.client.callTool({
        name: 'github_list_issues',
        arguments: {
          repo: 'acme/api',
          state: 'all',
          per_page: 20,
          ...(cursor === undefined ? {} : { cursor }),
        },
      });
      const page = unframed(result.structuredContent) as Listed & { pull_requests_skipped: number };
      seen.push(...page.items.map((i) => i.number as number));
      skipped += page.pull_requests_skipped;
      cursor = page.next_cursor;
    } while (cursor !== undefined);
    expect(seen).toHaveLength(46);
    expect(seen).not.toContain(7);
    expect(skipped).toBe(1);
  });

  it('returns the compact fields by default and exactly the fields asked for', async () => {
    const compact = await h.client.callTool({
      name: 'github_list_issues',
      arguments: { repo: 'acme/api', labels: ['p1'] },
    });
    expect((unframed(compact.structuredContent) as Listed).items).toEqual([
      {
        number: 1,
        title: 'Login fails with SSO',
        state: 'open',
        labels: ['bug', 'p1'],
        assignees: ['alice'],
        author: 'octo',
        comments: 3,
        updated_at: '2025-01-03T12:00:00.000Z',
      },
    ]);
    const narrow = await modern.client.callTool({
      name: 'github_list_issues',
      arguments: { repo: 'acme/api', labels: ['p1'], fields: ['number', 'body'] },
    });
    expect((unframed(narrow.structuredContent) as Listed).items).toEqual([
      { number: 1, body: 'Steps: open /login, choose SSO, see 500.\n\nExpected: a session.' },
    ]);
  });

  it('refuses a cursor replayed with other filters', async () => {
    const first = await h.client.callTool({
      name: 'github_list_issues',
      arguments: { repo: 'acme/api', per_page: 5 },
    });
    const cursor = (unframed(first.structuredContent) as Listed).next_cursor!;
    const replayed = await h.client.callTool({
      name: 'github_list_issues',
      arguments: { repo: 'acme/api', per_page: 5, labels: ['bug'], cursor },
    });
    expect(replayed.isError).toBe(true);
    expect(text(replayed)).toMatch(/Invalid cursor/);
  });

  it('filters by assignee, milestone and since', async () => {
    const result = await h.client.callTool({
      name: 'github_list_issues',
      arguments: {
        repo: 'acme/api',
        milestone: 1,
        assignee: 'none',
        since: '2025-01-05T00:00:00Z',
      },
    });
    expect((unframed(result.structuredContent) as Listed).items.map((i) => i.number)).toEqual([6]);
  });
});

describe('github_get_issue', () => {
  it('returns the issue and its comments, paged', async () => {
    const result = await h.client.callTool({
      name: 'github_get_issue',
      arguments: { repo: 'acme/api', number: 1, comments_per_page: 2 },
    });
    const got = unframed(result.structuredContent) as {
      issue: Record<string, unknown>;
      comments: Array<{ author: string }>;
      comments_total: number;
      next_comments_cursor?: string;
    };
    expect(got.issue).toMatchObject({
      repo: 'acme/api',
      number: 1,
      milestone: 'v1.0',
      url: 'https://github.example.test/acme/api/issues/1',
    });
    expect(got.comments.map((c) => c.author)).toEqual(['alice', 'mallory']);
    expect(got.comments_total).toBe(3);
    const rest = await modern.client.callTool({
      name: 'github_get_issue',
      arguments: {
        repo: 'acme/api',
        number: 1,
        comments_per_page: 2,
        comments_cursor: got.next_comments_cursor,
      },
    });
    expect(
      (unframed(rest.structuredContent) as { comments: Array<{ author: string }> }).comments.map(
        (c) => c.author,
      ),
    ).toEqual(['bob']);
  });

  it('says clearly when an issue does not exist', async () => {
    const result = await h.client.callTool({
      name: 'github_get_issue',
      arguments: { repo: 'acme/api', number: 999 },
    });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(
      'GitHub answered 404 (not found): no such repository, issue or comment, or this server cannot see it',
    );
  });
});

describe('github_search_issues', () => {
  it('searches the allowed repositories with a query the server builds', async () => {
    const result = await h.client.callTool({
      name: 'github_search_issues',
      arguments: { text: 'SSO', labels: ['help wanted'], exclude_labels: ['p1'], state: 'open' },
    });
    const got = unframed(result.structuredContent) as Listed & { query: string };
    expect(got.query).toBe(
      'repo:acme/api repo:acme/web is:issue is:open label:"help wanted" -label:p1 "SSO"',
    );
    expect(got.items).toEqual([]);
    const sso = await modern.client.callTool({
      name: 'github_search_issues',
      arguments: { text: 'SSO', sort: 'created', order: 'asc' },
    });
    expect(
      (unframed(sso.structuredContent) as Listed).items.map(
        (i) => `${i.repo as string}#${i.number as number}`,
      ),
    ).toEqual(['acme/api#1', 'acme/api#6']);
  });

  it('pages search results', async () => {
    const first = await h.client.callTool({
      name: 'github_search_issues',
      arguments: { text: 'Backlog', per_page: 30 },
    });
    const page1 = unframed(first.structuredContent) as Listed & { total_count: number };
    expect(page1.total_count).toBe(40);
    const second = await h.client.callTool({
      name: 'github_search_issues',
      arguments: { text: 'Backlog', per_page: 30, cursor: page1.next_cursor },
    });
    expect((unframed(second.structuredContent) as Listed).items).toHaveLength(10);
  });

  it('refuses search words that cannot be expressed and logins that are not logins', async () => {
    const quote = await h.client.callTool({
      name: 'github_search_issues',
      arguments: { labels: ['a"b'] },
    });
    expect(text(quote)).toMatch(/labels cannot contain a double quote/);
    const login = await h.client.callTool({
      name: 'github_search_issues',
      arguments: { author: 'x y' },
    });
    expect(login.isError).toBe(true);
    expect(text(login)).toMatch(/author/);
  });
});
