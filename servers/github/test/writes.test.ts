import { unframed } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { TOKEN, connectGitHub, expectValidResponses, startFake, text } from './helpers.ts';
import type { GitHubHarness } from './helpers.ts';

// The write tools: off by default, dry runs, templates, idempotency after lost answers, and
// GitHub's refusals as clear errors.

let fake: GitHubFake;
let h: GitHubHarness;
const READER = 'github_pat_11READER000000000000000000000000000000000000000000000000000000000000000';

beforeAll(async () => {
  fake = await startFake({
    tokens: {
      [TOKEN]: { login: 'octo', repos: ['acme/web', 'acme/secret'] },
      [READER]: { login: 'reader', repos: [] },
    },
  });
  h = await connectGitHub(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});
afterAll(async () => {
  await h?.close();
  expectValidResponses(fake);
  await fake?.close();
});

const issuesOf = (repo: string) => fake.repo(repo).issues;
const posts = () => fake.requests.filter((r) => r.startsWith('POST '));

describe('gating', () => {
  it('keeps write tools off unless enabled', async () => {
    const readOnly = await connectGitHub(fake);
    try {
      const { tools } = await readOnly.client.listTools();
      expect(tools.map((t) => t.name)).not.toContain('github_create_issue');
      // A tool that is not listed cannot be called: it does not exist for this client.
      await expect(
        readOnly.client.callTool({
          name: 'github_create_issue',
          arguments: { repo: 'acme/api', title: 'x' },
        }),
      ).rejects.toThrow(/Unknown tool: github_create_issue/);
    } finally {
      await readOnly.close();
    }
    const { tools } = await h.client.listTools();
    const create = tools.find((t) => t.name === 'github_create_issue')!;
    expect(create.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      openWorldHint: true,
    });
    expect(tools.find((t) => t.name === 'github_update_issue')!.annotations).toMatchObject({
      destructiveHint: true,
    });
    expect(create.inputSchema.properties).toHaveProperty('dry_run');
  });

  it('previews a dry run and sends nothing', async () => {
    const before = posts().length;
    const count = issuesOf('acme/api').length;
    const result = await h.client.callTool({
      name: 'github_create_issue',
      arguments: { repo: 'acme/api', title: 'Preview me', labels: ['bug'], dry_run: true },
    });
    expect(text(result)).toMatch(
      /^DRY RUN — nothing was sent\. would open <untrusted-data-[0-9a-f]+>Preview me<\/untrusted-data-[0-9a-f]+> in acme\/api/,
    );
    expect(text(result)).toContain('"path": "/repos/acme/api/issues"');
    expect(posts().length).toBe(before);
    expect(issuesOf('acme/api').length).toBe(count);
  });
});

describe('github_create_issue', () => {
  it('applies a form template: title prefix, labels, required sections', async () => {
    const result = await h.client.callTool({
      name: 'github_create_issue',
      arguments: {
        repo: 'acme/api',
        title: 'Worker crashes on empty payload',
        body: '### What happened?\n\nThe worker crashed.\n\n### Version\n\n1.4.2',
        template: 'bug_report',
      },
    });
    expect(unframed(result.structuredContent)).toMatchObject({
      issue: { title: '[Bug]: Worker crashes on empty payload', labels: ['bug'], state: 'open' },
      deduplicated: false,
    });
    const made = issuesOf('acme/api').at(-1)!;
    expect(made.body).toMatch(
      /^### What happened\?[\s\S]*1\.4\.2\n\n<!-- gatehouse:[0-9a-f]{24} -->$/,
    );
  });

  it('says which required sections a form body leaves empty, and which templates exist', async () => {
    const incomplete = await h.client.callTool({
      name: 'github_create_issue',
      arguments: {
        repo: 'acme/api',
        title: 'x',
        body: '### What happened?\n\n_No response_',
        template: 'Bug report',
      },
    });
    expect(text(incomplete)).toMatch(
      /leaves required sections of "Bug report" empty: What happened\?, Version/,
    );
    expect(text(incomplete)).toContain('### Version');
    const unknown = await h.client.callTool({
      name: 'github_create_issue',
      arguments: { repo: 'acme/api', title: 'x', template: 'security' },
    });
    expect(text(unknown)).toBe(
      'No issue template "security" in acme/api (templates: Bug report, Feature request).',
    );
  });

  it('does not open a second issue when the same create is repeated', async () => {
    const args = { repo: 'acme/api', title: 'Same twice', body: 'Once only.' };
    const first = await h.client.callTool({ name: 'github_create_issue', arguments: args });
    const second = await h.client.callTool({ name: 'github_create_issue', arguments: args });
    const a = unframed(first.structuredContent) as {
      issue: { number: number };
      deduplicated: boolean;
    };
    const b = unframed(second.structuredContent) as {
      issue: { number: number };
      deduplicated: boolean;
    };
    expect(b).toEqual({ ...a, deduplicated: true });
    expect(text(second)).toMatch(
      /^Created once \(an identical request within the dedupe window already created it; nothing new sent\) acme\/api#\d+/,
    );
    expect(issuesOf('acme/api').filter((i) => i.title === 'Same twice')).toHaveLength(1);
  });

  it('finds the issue a lost answer created instead of creating it again', async () => {
    // GitHub creates the issue, then the answer is lost (a 502 after the fact).
    fake.fail({ match: 'POST /repos/acme/api/issues', status: 502, afterEffect: true });
    const result = await h.client.callTool({
      name: 'github_create_issue',
      arguments: { repo: 'acme/api', title: 'Lost answer', body: 'x' },
    });
    expect(unframed(result.structuredContent)).toMatchObject({
      issue: { title: 'Lost answer' },
      deduplicated: false,
      recovered: true,
    });
    expect(text(result)).toMatch(/^Created once \(GitHub's answer was lost; found the issue\)/);
    expect(issuesOf('acme/api').filter((i) => i.title === 'Lost answer')).toHaveLength(1);
  });

  it('finds it after a timeout too, and reports a real failure when nothing was created', async () => {
    const slow = await connectGitHub(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      GITHUB_REQUEST_TIMEOUT_MS: '500',
    });
    try {
      fake.fail({
        match: 'POST /repos/acme/api/issues',
        status: 504,
        afterEffect: true,
        delayMs: 1500,
      });
      const timedOut = await slow.client.callTool({
        name: 'github_create_issue',
        arguments: { repo: 'acme/api', title: 'Timed out', body: 'x' },
      });
      expect(unframed(timedOut.structuredContent)).toMatchObject({
        deduplicated: false,
        recovered: true,
      });
      expect(issuesOf('acme/api').filter((i) => i.title === 'Timed out')).toHaveLength(1);
    } finally {
      await slow.close();
    }
    fake.fail({ match: 'POST /repos/acme/api/issues', status: 502 });
    const failed = await h.client.callTool({
      name: 'github_create_issue',
      arguments: { repo: 'acme/api', title: 'Never made' },
    });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toBe(
      'GitHub failed (502); this is not caused by your request. Try again later.',
    );
    expect(issuesOf('acme/api').filter((i) => i.title === 'Never made')).toHaveLength(0);
  });

  it("turns GitHub's validation errors into a clear message", async () => {
    const result = await h.client.callTool({
      name: 'github_create_issue',
      arguments: { repo: 'acme/api', title: 'Assign a stranger', assignees: ['nobody'] },
    });
    expect(text(result)).toBe(
      'GitHub answered 422 (the request was invalid): Validation Failed: assignees invalid ("nobody")',
    );
  });
});

describe('github_update_issue and github_add_comment', () => {
  it('adds and removes labels, closes with a reason, and reopens', async () => {
    const added = await h.client.callTool({
      name: 'github_update_issue',
      arguments: {
        repo: 'acme/api',
        number: 5,
        add_labels: ['p1', 'bug'],
        remove_labels: ['help wanted'],
      },
    });
    expect(unframed(added.structuredContent)).toMatchObject({
      issue: { labels: ['p1', 'bug'] },
      changed: ['labels'],
    });
    const closed = await h.client.callTool({
      name: 'github_update_issue',
      arguments: { repo: 'acme/api', number: 5, state: 'closed', state_reason: 'not_planned' },
    });
    expect(unframed(closed.structuredContent)).toMatchObject({
      issue: { state: 'closed', state_reason: 'not_planned' },
    });
    const reopened = await h.client.callTool({
      name: 'github_update_issue',
      arguments: { repo: 'acme/api', number: 5, state: 'open' },
    });
    expect(unframed(reopened.structuredContent)).toMatchObject({
      issue: { state: 'open', state_reason: 'reopened' },
    });
  });

  it('refuses an update with nothing to change, or labels both ways', async () => {
    const nothing = await h.client.callTool({
      name: 'github_update_issue',
      arguments: { repo: 'acme/api', number: 5 },
    });
    expect(text(nothing)).toBe('Nothing to change: give at least one field.');
    const both = await h.client.callTool({
      name: 'github_update_issue',
      arguments: { repo: 'acme/api', number: 5, labels: ['a'], add_labels: ['b'] },
    });
    expect(text(both)).toMatch(/not both/);
  });

  it('posts a comment once, even when repeated or when the answer is lost', async () => {
    const args = { repo: 'acme/api', number: 2, body: 'Looking into it.' };
    const first = await h.client.callTool({ name: 'github_add_comment', arguments: args });
    expect(unframed(first.structuredContent)).toMatchObject({ deduplicated: false });
    const again = await h.client.callTool({ name: 'github_add_comment', arguments: args });
    expect(unframed(again.structuredContent)).toMatchObject({ deduplicated: true });
    expect(text(again)).toMatch(/^Commented once \(an identical request within the dedupe window/);
    fake.fail({ match: 'POST /repos/acme/api/issues/2/comments', status: 500, afterEffect: true });
    const lost = await h.client.callTool({
      name: 'github_add_comment',
      arguments: { ...args, body: 'Second note.' },
    });
    expect(unframed(lost.structuredContent)).toMatchObject({
      deduplicated: false,
      recovered: true,
    });
    const bodies = fake
      .repo('acme/api')
      .issues.find((i) => i.number === 2)!
      .comments.map((c) => c.body.split('\n')[0]);
    expect(bodies.filter((b) => b === 'Looking into it.')).toHaveLength(1);
    expect(bodies.filter((b) => b === 'Second note.')).toHaveLength(1);
  });

  it('reports a missing permission as such', async () => {
    const reader = await connectGitHub(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      GITHUB_TOKEN: READER,
    });
    try {
      const result = await reader.client.callTool({
        name: 'github_update_issue',
        arguments: { repo: 'acme/api', number: 2, title: 'Renamed' },
      });
      expect(text(result)).toBe(
        "GitHub answered 403 (access denied): Must have admin rights to Repository. (this server's credentials lack the permission)",
      );
    } finally {
      await reader.close();
    }
  });

  it('keeps the written content in the audit record (write tools are evidence)', () => {
    const record = h.records.find(
      (r) =>
        r.event.action === 'tools/call' &&
        r.tool?.name === 'github_add_comment' &&
        r.event.outcome === 'success',
    );
    expect(record).toMatchObject({
      args: { redacted: { body: 'Looking into it.' } },
      target: { resource: 'github:acme/api#2' },
    });
  });
});
