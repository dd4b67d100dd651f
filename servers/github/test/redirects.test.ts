import { redirectMatrix, travel } from '@gatehouse/testkit';
import type { Road } from '@gatehouse/testkit';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectGitHub, startFake } from './helpers.ts';
import type { GitHubHarness } from './helpers.ts';

// A write that follows a redirect goes where nobody checked: GitHub answering a comment with
// `307 Location: /repos/other/lib/issues/1/comments` had the comment posted outside GITHUB_REPOS.
// Roads found and tested: every tool (reads and writes), every resource template, every prompt,
// the resource listing; redirects 301, 302, 303, 307 and 308; to a repository of the same host
// outside the allow-list and to another host. No write follows a redirect; a read follows one
// only to an allowed repository on the configured host (the kit's fetch, re-checked there).

const ROADS: Road[] = [
  { kind: 'tool', name: 'github_get_issue', arguments: { repo: 'acme/api', number: 1 } },
  { kind: 'tool', name: 'github_list_issues', arguments: { repo: 'acme/api' } },
  { kind: 'tool', name: 'github_search_issues', arguments: { text: 'SSO' } },
  {
    kind: 'tool',
    name: 'github_create_issue',
    arguments: { repo: 'acme/api', title: 'Redirected?', body: 'no' },
    write: true,
  },
  {
    kind: 'tool',
    name: 'github_update_issue',
    arguments: { repo: 'acme/api', number: 1, title: 'Renamed?' },
    write: true,
  },
  {
    kind: 'tool',
    name: 'github_add_comment',
    arguments: { repo: 'acme/api', number: 1, body: 'followed?' },
    write: true,
  },
  { kind: 'resource', uri: 'github://acme/api/labels' },
  { kind: 'resource', uri: 'github://acme/api/milestones' },
  { kind: 'resource', uri: 'github://acme/api/issue-templates' },
  { kind: 'prompt', name: 'github_triage_issue', arguments: { repo: 'acme/api', number: '1' } },
  { kind: 'prompt', name: 'github_summarise_backlog', arguments: { repo: 'acme/api' } },
  {
    kind: 'prompt',
    name: 'github_write_bug_report',
    arguments: { repo: 'acme/api', notes: 'it crashes' },
  },
];

let fake: GitHubFake;
let h: GitHubHarness;

beforeAll(async () => {
  fake = await startFake();
  h = await connectGitHub(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});

afterAll(async () => {
  await h?.close();
  await fake?.close();
});

describe('a redirect on every road', () => {
  it('is never followed by a write, nor by a read out of the allowed repositories or the host', async () => {
    const { problems, asked, cells } = await redirectMatrix({
      client: h.client,
      fake,
      roads: ROADS,
      inside: '/repos/other/lib/issues/1/comments',
      state: () => JSON.stringify(fake.repos),
    });
    expect(problems).toEqual([]);
    // Every road but none asked GitHub something, in every cell.
    expect(asked).toBeGreaterThanOrEqual(cells - 10);
  }, 120_000);

  it('says what happened: a redirect it did not follow, nothing sent elsewhere', async () => {
    fake.fail({
      status: 307,
      redirect: `${fake.url}/repos/other/lib/issues/1/comments`,
      match: 'POST',
    });
    const write = await travel(
      h.client,
      ROADS.find((r) => r.kind === 'tool' && r.name === 'github_add_comment')!,
    );
    fake.clearFailures();
    expect(write.error).toBe(true);
    expect(write.text).toContain(
      'GitHub answered 307 (the request was refused): it answered a write with a redirect (307), which this server never follows: nothing was sent to the other address',
    );
    expect(write.text).not.toContain('other/lib');
  });

  it('lets a read follow one to an allowed repository on the same host', async () => {
    fake.fail({ status: 301, redirect: `${fake.url}/repos/acme/web/issues/1`, match: 'GET' });
    const read = await travel(h.client, ROADS[0]!);
    fake.clearFailures();
    expect(read.error, read.text).toBe(false);
    expect(read.text).toContain('acme/web#1');
  });
});

describe('an answer that is not GitHub’s JSON', () => {
  const PAGE = '<!doctype html><title>Unicorn!</title><script>steal()</script>';

  it.each([200, 404, 502])(
    'with status %i is never read nor quoted, on any road',
    async (status) => {
      for (const road of ROADS) {
        fake.fail({ status, page: { contentType: 'text/html', body: PAGE }, times: 1_000 });
        const before = JSON.stringify(fake.repos);
        const answer = await travel(h.client, road);
        fake.clearFailures();
        expect(JSON.stringify(fake.repos)).toBe(before);
        expect(answer.text).not.toMatch(/doctype|<script|steal|Unicorn/i);
      }
    },
  );
});
