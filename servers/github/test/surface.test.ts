import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unframed } from '@gatehouse/testkit';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { parseTemplate } from '../src/templates.ts';
import { connectGitHub, expectValidResponses, startFake } from './helpers.ts';
import type { GitHubHarness } from './helpers.ts';

// Resources and prompts through a real client, in both eras.

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

// Users' texts in a resource come framed, value by value (checked in hostile.test.ts); the values
// are compared here without their frames.
const json = (r: { contents: unknown[] }) =>
  unframed(JSON.parse((r.contents[0] as { text: string }).text) as unknown);

describe('resources', () => {
  it('offers labels, milestones and issue templates per repository', async () => {
    const { resourceTemplates } = await modern.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
      'github://{owner}/{repo}/issue-templates',
      'github://{owner}/{repo}/labels',
      'github://{owner}/{repo}/milestones',
    ]);
    expect(json(await h.client.readResource({ uri: 'github://acme/api/milestones' }))).toEqual([
      {
        number: 1,
        title: 'v1.0',
        state: 'open',
        due_on: '2025-06-30T07:00:00Z',
        open_issues: 2,
        closed_issues: 0,
        description: 'First release',
      },
      {
        number: 2,
        title: 'v0.9',
        state: 'closed',
        due_on: null,
        open_issues: 0,
        closed_issues: 0,
        description: null,
      },
    ]);
  });

  it('parses issue forms and markdown templates into the schema a new issue follows', async () => {
    const templates = json(
      await modern.client.readResource({ uri: 'github://acme/api/issue-templates' }),
    );
    expect(templates).toMatchObject({
      repo: 'acme/api',
      blank_issues_enabled: false,
      problems: [],
      templates: [
        {
          kind: 'form',
          name: 'Bug report',
          title_prefix: '[Bug]: ',
          labels: ['bug'],
          fields: [
            { id: 'what-happened', type: 'textarea', label: 'What happened?', required: true },
            { id: 'version', type: 'input', label: 'Version', required: true },
            {
              id: 'os',
              type: 'dropdown',
              label: 'Operating system',
              required: false,
              options: ['Linux', 'macOS', 'Windows'],
            },
          ],
        },
        {
          kind: 'markdown',
          name: 'Feature request',
          about: 'Suggest an idea',
          title_prefix: '[Feature] ',
          labels: ['enhancement'],
          assignees: ['alice'],
          body: '## Problem\n\n## Proposal',
        },
      ],
    });
    // A repository without templates has an empty list.
    expect(
      json(await h.client.readResource({ uri: 'github://acme/web/issue-templates' })),
    ).toMatchObject({ templates: [] });
  });

  it('reports a broken template instead of failing', () => {
    expect(() => parseTemplate('.github/ISSUE_TEMPLATE/x.yml', 'name: x\nbody: 3\n')).toThrow(
      /needs a body list/,
    );
  });
});

describe('prompts', () => {
  it('lists three prompts with repo completion', async () => {
    const { prompts } = await modern.client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual([
      'github_summarise_backlog',
      'github_triage_issue',
      'github_write_bug_report',
    ]);
    const completion = await h.client.complete({
      ref: { type: 'ref/prompt', name: 'github_triage_issue' },
      argument: { name: 'repo', value: 'acme/w' },
    });
    expect(completion.completion.values).toEqual(['acme/web']);
  });

  it('triages an issue with its labels and candidate duplicates embedded, content framed', async () => {
    const prompt = await h.client.getPrompt({
      name: 'github_triage_issue',
      arguments: { repo: 'acme/api', number: '1' },
    });
    const body = (prompt.messages[0]!.content as { text: string }).text;
    expect(body).toContain("bug — Something isn't working");
    expect(body).toMatch(
      /<untrusted-data-[0-9a-f]{12} source="GitHub issue acme\/api#1 and search results">/,
    );
    expect(body).toContain('acme/api#1 [open] Login fails with SSO');
    expect(body).toMatch(/CANDIDATE DUPLICATES\nacme\/api#6 \[open\] Improve SSO error messages/);
    await expect(
      h.client.getPrompt({
        name: 'github_triage_issue',
        arguments: { repo: 'acme/api', number: 'six' },
      }),
    ).rejects.toThrow(/number/);
  });

  it("writes a bug report along the repository's form", async () => {
    const prompt = await modern.client.getPrompt({
      name: 'github_write_bug_report',
      arguments: { repo: 'acme/api', notes: 'login broke after upgrade to 1.4, 500 on /login' },
    });
    const body = (prompt.messages[0]!.content as { text: string }).text;
    expect(body).toContain('login broke after upgrade to 1.4');
    // The template is the repository's content: inside an untrusted frame, like an issue body.
    const tag = /<(untrusted-data-[0-9a-f]{12}) source="the issue template of acme\/api">/.exec(
      body,
    )?.[1];
    expect(tag).toBeDefined();
    const inside = body.split(`<${tag!}`)[1]!.split(`</${tag!}>`)[0]!;
    expect(inside).toContain('Template "Bug report"');
    expect(inside).toContain('### What happened?');
    // (The name is framed with the same markers: the last piece starts after the first frame.)
    expect(body.split(`</${tag!}>`).slice(1).join('')).toMatch(
      /the template named in <untrusted-data-[0-9a-f]+>Bug report/,
    );
  });

  it('summarises a backlog with the open issues embedded', async () => {
    const prompt = await h.client.getPrompt({
      name: 'github_summarise_backlog',
      arguments: { repo: 'acme/api', label: 'bug' },
    });
    const body = (prompt.messages[0]!.content as { text: string }).text;
    expect(body).toMatch(/open backlog of acme\/api \(label bug\): 15 issues/);
    expect(body).not.toContain('Crash on empty payload'); // closed
  });
});
