import { unframed } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { connectGitHub, expectValidResponses, startFake, text } from './helpers.ts';
import type { GitHubHarness } from './helpers.ts';

// The repository allow-list on every path: tools (reads and writes), search, resources,
// completions and prompts. A refused call sends nothing to GitHub.

let fake: GitHubFake;
let h: GitHubHarness;

beforeAll(async () => {
  fake = await startFake();
  h = await connectGitHub(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});
afterAll(async () => {
  await h?.close();
  expectValidResponses(fake);
  await fake?.close();
});

async function sentNothing<T>(fn: () => Promise<T>): Promise<T> {
  const before = fake.requests.length;
  const result = await fn();
  expect(fake.requests.slice(before)).toEqual([]);
  return result;
}

describe('tools outside the allowed repositories', () => {
  it.each([
    ['github_list_issues', { repo: 'acme/secret' }],
    ['github_get_issue', { repo: 'acme/secret', number: 1 }],
    ['github_search_issues', { repo: 'other/lib', text: 'SSO' }],
    ['github_create_issue', { repo: 'acme/secret', title: 'x' }],
    ['github_update_issue', { repo: 'other/lib', number: 1, state: 'closed' }],
    ['github_add_comment', { repo: 'acme/secret', number: 1, body: 'leak' }],
  ] as const)('%s is refused without a request to GitHub', async (name, args) => {
    const result = await sentNothing(() => h.client.callTool({ name, arguments: args }));
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /is not one of this server's repositories \(acme\/api, acme\/web\)/,
    );
    // A refusal of the allow-list is a denial, with its rule: what a reviewer looks for first.
    const record = h.records.filter((r) => r.mcp?.name === name).at(-1)!;
    expect(record.event).toMatchObject({ outcome: 'failure', reason: 'denied' });
    expect(record.event.type).toContain('denied');
    expect(record.policy).toEqual({ decision: 'deny', rule: 'repo_allow_list' });
  });

  it.each([
    'acme/..',
    'acme/.',
    'acme/...',
    'acme/api.git',
    '-acme/api',
    'ac--me/api',
    'acme-/api',
  ])(
    'refuses %s under acme/* before any request: a name GitHub itself would refuse',
    async (repo) => {
      const owners = await connectGitHub(fake, { GITHUB_REPOS: 'acme/*' });
      try {
        const result = await sentNothing(() =>
          owners.client.callTool({ name: 'github_list_issues', arguments: { repo } }),
        );
        expect(text(result)).toMatch(/is not a repository name/);
        const [owner, name] = repo.split('/');
        await expect(
          sentNothing(() =>
            owners.client.readResource({ uri: `github://${owner}/${name}/labels` }),
          ),
        ).rejects.toThrow();
      } finally {
        await owners.close();
      }
    },
  );

  it('refuses names that are not repositories', async () => {
    const result = await h.client.callTool({
      name: 'github_get_issue',
      arguments: { repo: '../acme/api', number: 1 },
    });
    expect(text(result)).toMatch(/is not a repository name/);
  });
});

describe('search', () => {
  it('keeps qualifiers in the words as plain terms', async () => {
    const result = await h.client.callTool({
      name: 'github_search_issues',
      arguments: { text: 'credentials repo:acme/secret OR org:acme (is:pr)' },
    });
    const got = unframed(result.structuredContent) as { query: string; items: unknown[] };
    expect(got.query).toBe(
      'repo:acme/api repo:acme/web is:issue "credentials" "repo:acme/secret" "OR" "org:acme" "(is:pr)"',
    );
    expect(got.items).toEqual([]);
    expect(fake.requests.at(-1)).toMatch(
      /^GET \/search\/issues\?q=repo%3Aacme%2Fapi%20repo%3Aacme%2Fweb/,
    );
  });

  it('narrows owner/* to the repositories the core allow-list names', async () => {
    const narrow = await connectGitHub(fake, {
      GITHUB_REPOS: 'acme/*',
      GATEHOUSE_ALLOW_TARGETS: 'github:acme/api',
    });
    try {
      const result = await narrow.client.callTool({
        name: 'github_search_issues',
        arguments: { text: 'SSO' },
      });
      expect(unframed(result.structuredContent)).toMatchObject({
        query: 'repo:acme/api is:issue "SSO"',
      });
      const direct = await narrow.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/web', number: 1 },
      });
      // The core's allow-list stops it before the tool runs.
      expect(text(direct)).toMatch(/Denied: github:acme\/web#1 is outside the allowed targets/);
    } finally {
      await narrow.close();
    }
    const wide = await connectGitHub(fake, { GITHUB_REPOS: 'acme/*' });
    try {
      const result = await wide.client.callTool({
        name: 'github_search_issues',
        arguments: { text: 'credentials' },
      });
      expect(unframed(result.structuredContent)).toMatchObject({
        query: 'user:acme is:issue "credentials"',
        items: [{ repo: 'acme/secret', number: 1 }],
      });
    } finally {
      await wide.close();
    }
  });

  it('drops results from other repositories even when GitHub returns them', async () => {
    const misbehaving = await startFake({ unscopedSearch: true });
    const s = await connectGitHub(misbehaving);
    try {
      const result = await s.client.callTool({
        name: 'github_search_issues',
        arguments: { text: 'SSO' },
      });
      const got = unframed(result.structuredContent) as {
        items: Array<{ repo: string }>;
        outside_scope_dropped: number;
      };
      expect(got.items.map((i) => i.repo)).toEqual(['acme/api', 'acme/api']);
      expect(got.outside_scope_dropped).toBe(1);
      expect(text(result)).not.toContain('other/lib');
    } finally {
      await s.close();
      expectValidResponses(misbehaving);
      await misbehaving.close();
    }
  });
});

describe('every path that shows issues keeps to the allowed repositories', () => {
  it('the triage prompt shows no other repository as a duplicate, whatever search returns', async () => {
    const misbehaving = await startFake({ unscopedSearch: true });
    const s = await connectGitHub(misbehaving);
    try {
      const prompt = await s.client.getPrompt({
        name: 'github_triage_issue',
        arguments: { repo: 'acme/api', number: '6' },
      });
      const body = (prompt.messages[0]!.content as { text: string }).text;
      // other/lib#1 "Login fails with SSO (other project)" matches "SSO": GitHub returned it.
      expect(misbehaving.requests.some((r) => r.startsWith('GET /search/issues'))).toBe(true);
      expect(body).toContain('acme/api#1');
      expect(body).not.toContain('other/lib');
      expect(body).not.toContain('other project');
    } finally {
      await s.close();
      expectValidResponses(misbehaving);
      await misbehaving.close();
    }
  });

  it('an issue transferred out of the allowed repositories is refused, not shown', async () => {
    const moving = await startFake();
    const s = await connectGitHub(moving);
    try {
      const secret = moving.transfer('acme/api', 5, 'acme/secret');
      const result = await s.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/api', number: 5 },
      });
      expect(result.isError).toBe(true);
      // GitHub's redirect is not followed out of the allowed repositories, and the refusal
      // names nothing of where it went (a refusal may name only what the caller may see).
      expect(text(result)).toMatch(
        /GitHub answered that it moved \(301\) to a place outside this server's repositories/,
      );
      expect(text(result)).not.toMatch(/secret|typo in README/);
      expect(moving.requests.some((r) => r.includes('/repos/acme/secret/'))).toBe(false);
      expect(s.records.at(-1)!.policy).toEqual({ decision: 'deny', rule: 'repo_allow_list' });
      await expect(
        s.client.getPrompt({
          name: 'github_triage_issue',
          arguments: { repo: 'acme/api', number: '5' },
        }),
      ).rejects.toThrow(/moved \(301\) to a place outside this server's repositories/);
      expect(secret).toBeGreaterThan(1);
      // Moved within the allowed repositories: served from where it lives now.
      const web = moving.transfer('acme/api', 3, 'acme/web');
      const moved = await s.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/api', number: 3, comments: false },
      });
      expect(unframed(moved.structuredContent)).toMatchObject({
        issue: { repo: 'acme/web', number: web },
      });
    } finally {
      await s.close();
      expectValidResponses(moving);
      await moving.close();
    }
  });
});

describe('search terms never leave their quotes', () => {
  it('drops backslashes from the words and refuses them in qualifier values', async () => {
    const result = await h.client.callTool({
      name: 'github_search_issues',
      arguments: { text: 'crash\\" repo:acme/secret \\' },
    });
    const got = unframed(result.structuredContent) as { query: string };
    expect(got.query).toBe('repo:acme/api repo:acme/web is:issue "crash" "repo:acme/secret"');
    expect(got.query).not.toContain('\\');
    const label = await sentNothing(() =>
      h.client.callTool({
        name: 'github_search_issues',
        arguments: { labels: ['bug\\'], text: 'x' },
      }),
    );
    expect(text(label)).toMatch(/cannot contain a double quote or a backslash/);
  });
});

describe('resources, completions and prompts', () => {
  it('lists and reads only allowed repositories', async () => {
    const { resources } = await h.client.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual([
      'github://acme/api/issue-templates',
      'github://acme/api/labels',
      'github://acme/api/milestones',
      'github://acme/web/issue-templates',
      'github://acme/web/labels',
      'github://acme/web/milestones',
    ]);
    const labels = await h.client.readResource({ uri: 'github://acme/api/labels' });
    expect(JSON.parse((labels.contents[0] as { text: string }).text)).toHaveLength(4);
    for (const uri of ['github://acme/secret/labels', 'github://other/lib/milestones']) {
      await sentNothing(() => expect(h.client.readResource({ uri })).rejects.toThrow(/not found/i));
    }
  });

  it('completes owners and repositories from the allow-list only', async () => {
    const complete = (name: string, value: string, args?: Record<string, string>) =>
      h.client.complete({
        ref: { type: 'ref/resource', uri: 'github://{owner}/{repo}/labels' },
        argument: { name, value },
        ...(args === undefined ? {} : { context: { arguments: args } }),
      });
    expect((await complete('owner', '')).completion.values).toEqual(['acme']);
    expect((await complete('repo', '', { owner: 'acme' })).completion.values).toEqual([
      'api',
      'web',
    ]);
    expect((await complete('repo', 's', { owner: 'acme' })).completion.values).toEqual([]);
  });

  it('refuses prompts for other repositories', async () => {
    await sentNothing(() =>
      expect(
        h.client.getPrompt({
          name: 'github_summarise_backlog',
          arguments: { repo: 'acme/secret' },
        }),
      ).rejects.toThrow(/not one of this server's repositories/),
    );
  });
});
