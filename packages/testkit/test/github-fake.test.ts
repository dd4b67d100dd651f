import { generateKeyPairSync } from 'node:crypto';
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  githubSeed,
  parseSearchQuery,
  startGitHubFake,
  validateGitHubResponses,
} from '../src/github.js';
import type { GitHubFake } from '../src/github.js';

// The fake against the real Octokit client, and every response it sent against GitHub's
// published OpenAPI description.

let fake: GitHubFake;
let gh: Octokit;
const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });

beforeAll(async () => {
  fake = await startGitHubFake({
    repos: githubSeed(),
    tokens: {
      ghp_octo: { login: 'octo', repos: ['acme/web', 'acme/secret'], scopes: 'repo, read:org' },
    },
    app: {
      id: 4242,
      publicKey: keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      installations: { 77: { login: 'gatehouse[bot]', repos: ['acme/web'] } },
    },
  });
  gh = new Octokit({ auth: 'ghp_octo', baseUrl: fake.url });
});

afterAll(async () => {
  await fake?.close();
});

describe('the GitHub fake', () => {
  it('serves the issue endpoints with GitHub pagination', async () => {
    const first = await gh.rest.issues.listForRepo({ owner: 'acme', repo: 'api', per_page: 10 });
    expect(first.data).toHaveLength(10);
    expect(first.headers.link).toMatch(/rel="next".*rel="last"/);
    const all = await gh.paginate(gh.rest.issues.listForRepo, {
      owner: 'acme',
      repo: 'api',
      state: 'all',
      per_page: 20,
    });
    expect(all).toHaveLength(47);
    const labelled = await gh.rest.issues.listForRepo({
      owner: 'acme',
      repo: 'api',
      labels: 'bug,p1',
    });
    expect(labelled.data.map((i) => i.number)).toEqual([1]);
    const issue = await gh.rest.issues.get({ owner: 'acme', repo: 'api', issue_number: 1 });
    expect(issue.data).toMatchObject({
      title: 'Login fails with SSO',
      comments: 3,
      milestone: { title: 'v1.0' },
    });
    const comments = await gh.rest.issues.listComments({
      owner: 'acme',
      repo: 'api',
      issue_number: 1,
      per_page: 2,
    });
    expect(comments.data.map((c) => c.user?.login)).toEqual(['alice', 'mallory']);
  });

  it('writes issues and comments, with GitHub validation errors', async () => {
    const created = await gh.rest.issues.create({
      owner: 'acme',
      repo: 'api',
      title: 'New',
      body: 'x',
      labels: ['bug'],
    });
    expect(created.status).toBe(201);
    const updated = await gh.rest.issues.update({
      owner: 'acme',
      repo: 'api',
      issue_number: created.data.number,
      state: 'closed',
      state_reason: 'not_planned',
    });
    expect(updated.data).toMatchObject({ state: 'closed', state_reason: 'not_planned' });
    const comment = await gh.rest.issues.createComment({
      owner: 'acme',
      repo: 'api',
      issue_number: 2,
      body: 'hi',
    });
    expect(comment.data.body).toBe('hi');
    await expect(
      gh.rest.issues.create({ owner: 'acme', repo: 'api', title: '' }),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      gh.rest.issues.create({ owner: 'acme', repo: 'api', title: 't', assignees: ['nobody'] }),
    ).rejects.toMatchObject({ status: 422 });
  });

  it('searches with qualifiers and refuses repositories the token cannot see', async () => {
    const found = await gh.rest.search.issuesAndPullRequests({
      q: 'repo:acme/api is:issue label:bug sso',
    });
    expect(found.data.items.map((i) => i.number)).toEqual([1]);
    const quoted = await gh.rest.search.issuesAndPullRequests({
      q: 'repo:acme/api label:"help wanted"',
    });
    expect(quoted.data.total_count).toBe(1);
    const org = await gh.rest.search.issuesAndPullRequests({
      q: 'org:acme is:issue "credentials rotation"',
    });
    expect(org.data.items.map((i) => i.repository_url)).toEqual([`${fake.url}/repos/acme/secret`]);
    await expect(
      gh.rest.search.issuesAndPullRequests({ q: 'repo:nobody/nothing x' }),
    ).rejects.toMatchObject({ status: 422 });
    expect(parseSearchQuery('-label:"a b" repo:x/y "two words" free')).toEqual({
      qualifiers: [
        { key: 'label', value: 'a b', negated: true },
        { key: 'repo', value: 'x/y', negated: false },
      ],
      terms: ['two words', 'free'],
    });
  });

  it('serves labels, milestones, contents and permissions', async () => {
    expect(
      (await gh.rest.issues.listLabelsForRepo({ owner: 'acme', repo: 'api' })).data,
    ).toHaveLength(4);
    expect(
      (await gh.rest.issues.listMilestones({ owner: 'acme', repo: 'api', state: 'all' })).data,
    ).toHaveLength(2);
    const dir = await gh.rest.repos.getContent({
      owner: 'acme',
      repo: 'api',
      path: '.github/ISSUE_TEMPLATE',
    });
    expect((dir.data as Array<{ name: string }>).map((e) => e.name)).toEqual([
      'bug_report.yml',
      'config.yml',
      'feature_request.md',
    ]);
    const file = await gh.rest.repos.getContent({ owner: 'acme', repo: 'api', path: 'README.md' });
    expect(Buffer.from((file.data as { content: string }).content, 'base64').toString()).toBe(
      '# acme/api\n',
    );
    const perm = await gh.rest.repos.getCollaboratorPermissionLevel({
      owner: 'acme',
      repo: 'api',
      username: 'mallory',
    });
    expect(perm.data.permission).toBe('read');
    const repo = await gh.rest.repos.get({ owner: 'acme', repo: 'web' });
    expect(repo.data.permissions).toMatchObject({ push: true, admin: false });
    const me = await gh.rest.users.getAuthenticated();
    expect(me.headers['x-oauth-scopes']).toBe('repo, read:org');
  });

  it('answers 401, 404 and injected rate limits and failures as GitHub does', async () => {
    await expect(
      new Octokit({ auth: 'wrong', baseUrl: fake.url }).rest.users.getAuthenticated(),
    ).rejects.toMatchObject({ status: 401 });
    await expect(
      gh.rest.issues.get({ owner: 'other', repo: 'private', issue_number: 1 }),
    ).rejects.toMatchObject({ status: 404 });
    fake.fail({
      match: 'GET /repos/acme/api/issues',
      status: 403,
      rateLimit: 'secondary',
      retryAfter: 2,
    });
    const secondary = await gh.rest.issues
      .listForRepo({ owner: 'acme', repo: 'api' })
      .catch((e: unknown) => e);
    expect(secondary).toMatchObject({ status: 403, response: { headers: { 'retry-after': '2' } } });
    fake.fail({ match: 'GET /repos/acme/api/issues', status: 403, rateLimit: 'primary' });
    const primary = await gh.rest.issues
      .listForRepo({ owner: 'acme', repo: 'api' })
      .catch((e: unknown) => e);
    expect(primary).toMatchObject({
      status: 403,
      response: { headers: { 'x-ratelimit-remaining': '0' } },
    });
    fake.fail({ match: 'GET /repos/acme/api/issues/2', status: 502 });
    await expect(
      gh.rest.issues.get({ owner: 'acme', repo: 'api', issue_number: 2 }),
    ).rejects.toMatchObject({ status: 502 });
  });

  it('issues installation tokens to a GitHub App', async () => {
    const app = new Octokit({
      baseUrl: fake.url,
      authStrategy: createAppAuth,
      auth: {
        appId: 4242,
        privateKey: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        installationId: 77,
      },
    });
    const repo = await app.rest.repos.get({ owner: 'acme', repo: 'web' });
    expect(repo.data.full_name).toBe('acme/web');
    await expect(app.rest.repos.get({ owner: 'acme', repo: 'secret' })).rejects.toMatchObject({
      status: 404,
    });
  });

  it('sent only responses that validate against the GitHub OpenAPI description', () => {
    expect(fake.responses.length).toBeGreaterThan(20);
    expect(validateGitHubResponses(fake.responses)).toEqual([]);
  });

  it('catches a response that does not match the description', () => {
    const problems = validateGitHubResponses([
      {
        method: 'GET',
        route: '/repos/{owner}/{repo}/issues/{issue_number}',
        status: 200,
        body: { number: 'one' },
      },
    ]);
    expect(problems[0]).toMatch(
      /GET \/repos\/\{owner\}\/\{repo\}\/issues\/\{issue_number\} 200: .*must have required property/,
    );
  });
});
