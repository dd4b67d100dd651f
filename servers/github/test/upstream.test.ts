import { unframed } from '@gatehouse/testkit';
import { generateKeyPairSync } from 'node:crypto';
import { loadConfig } from '@gatehouse/core';
import { UpstreamError } from '@gatehouse/core';
import type { ConfigError } from '@gatehouse/core';
import { checkAtStart, createLogger } from '@gatehouse/core/runtime';
import { githubSeed, startGitHubFake } from '@gatehouse/testkit/github';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GitHubConfigSchema } from '../src/config.ts';
import { issuesOf } from '../src/format.ts';
import type { GitHubConfig } from '../src/config.ts';
import { createGitHubServer } from '../src/server.ts';
import {
  TOKEN,
  connectGitHub,
  expectValidResponses,
  FAST_PACING,
  startFake,
  text,
} from './helpers.ts';
import type { GitHubHarness } from './helpers.ts';

// GitHub's rate limits and failures as the model sees them, the credential check at start,
// GitHub Enterprise Server paths and GitHub App authentication.

/** The server as runServer starts it: the definition, then the core's start-up check. */
async function startGitHubServer(
  config: GitHubConfig,
  deps: Parameters<typeof createGitHubServer>[1],
): Promise<ReturnType<typeof createGitHubServer>> {
  const server = createGitHubServer(config, deps);
  await checkAtStart(server, deps.logger);
  return server;
}

let fake: GitHubFake;
let h: GitHubHarness;

beforeAll(async () => {
  fake = await startFake();
  h = await connectGitHub(fake);
});
afterAll(async () => {
  await h?.close();
  expectValidResponses(fake);
  await fake?.close();
});

const get = (number = 2) =>
  h.client.callTool({
    name: 'github_get_issue',
    arguments: { repo: 'acme/api', number, comments: false },
  });

describe('rate limits', () => {
  it('paces writes as GitHub advises, and never reads', async () => {
    // GitHub asks for a second between writes (the production pacing, no test shortcut). The
    // spy sees every timer the pacer sets: none for a read, one wait for a second write.
    const paced = await connectGitHub(
      fake,
      { GATEHOUSE_ENABLE_WRITES: 'true' },
      { productionPacing: true },
    );
    const real = globalThis.setTimeout;
    const waits: number[] = [];
    const spy = vi
      .spyOn(globalThis, 'setTimeout')
      .mockImplementation((fn: () => void, ms?: number) => {
        if ((new Error().stack ?? '').includes('Pacer.wait')) waits.push(ms ?? 0);
        return real(fn, ms);
      });
    const label = (labels: string[]) =>
      paced.client.callTool({
        name: 'github_update_issue',
        arguments: { repo: 'acme/api', number: 5, add_labels: labels },
      });
    try {
      const read = await paced.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/api', number: 2, comments: false },
      });
      expect(read.isError).toBeFalsy();
      expect(waits).toEqual([]);
      expect((await label(['p1'])).isError).toBeFalsy();
      expect((await label(['p2'])).isError).toBeFalsy();
      expect(waits).toHaveLength(1);
      expect(waits[0]).toBeGreaterThan(0);
      expect(waits[0]).toBeLessThanOrEqual(1_000);
    } finally {
      spy.mockRestore();
      await paced.close();
    }
  });

  it('honours a long Retry-After on a 429: no retry, the wait in the error', async () => {
    const before = fake.requests.length;
    fake.fail({
      match: 'GET /repos/acme/api/issues/2',
      status: 429,
      rateLimit: 'secondary',
      retryAfter: 120,
    });
    const result = await get();
    expect(text(result)).toBe('GitHub rate limit reached. Retry after 120s.');
    // One request: GitHub said to wait two minutes, and nothing was sent before that.
    expect(fake.requests.slice(before)).toEqual(['GET /repos/acme/api/issues/2']);
  });

  it('honours a Retry-After on a 503 too: no retry sooner than asked', async () => {
    const before = fake.requests.length;
    fake.fail({
      match: 'GET /repos/acme/api/issues/2',
      status: 503,
      retryAfter: 120,
    });
    const result = await get();
    expect(text(result)).toBe(
      'GitHub failed (503); this is not caused by your request. Try again later. Retry after 120s.',
    );
    expect(fake.requests.slice(before)).toEqual(['GET /repos/acme/api/issues/2']);
  });

  it('waits out a short secondary rate limit once, within the deadline', async () => {
    fake.fail({
      match: 'GET /repos/acme/api/issues/2',
      status: 403,
      rateLimit: 'secondary',
      retryAfter: 2,
    });
    const result = await get();
    expect(result.isError).toBeFalsy();
    expect(h.logs()).toContain('GitHub secondary rate limit reached');
  });

  it('reports a limit that does not clear in time, with the wait', async () => {
    fake.fail({
      match: 'GET /repos/acme/api/issues/2',
      status: 403,
      rateLimit: 'secondary',
      retryAfter: 120,
    });
    const secondary = await get();
    expect(secondary.isError).toBe(true);
    expect(text(secondary)).toBe('GitHub rate limit reached. Retry after 120s.');
    fake.fail({
      match: 'GET /repos/acme/api/issues/2',
      status: 403,
      rateLimit: 'primary',
      retryAfter: 900,
    });
    const primary = await get();
    expect(text(primary)).toMatch(/^GitHub rate limit reached\. Retry after (899|900)s\.$/);
    const record = h.records.filter((r) => r.event.action === 'tools/call').at(-1)!;
    expect(record.event.reason).toBe('rate_limited');
  });
});

describe('failures', () => {
  it('retries a read through a passing 5xx, and explains a lasting one without detail', async () => {
    fake.fail({ match: 'GET /repos/acme/api/issues/3', status: 502 });
    expect((await get(3)).isError).toBeFalsy();
    fake.fail({ match: 'GET /repos/acme/api/issues/3', status: 503, times: 5 });
    const down = await get(3);
    expect(text(down)).toBe(
      'GitHub failed (503); this is not caused by your request. Try again later.',
    );
  });

  it('ends a slow answer at GITHUB_REQUEST_TIMEOUT_MS (a delay, not an error), each attempt', async () => {
    const slow = await connectGitHub(fake, { GITHUB_REQUEST_TIMEOUT_MS: '500' });
    try {
      const before = fake.requests.length;
      // An answer a minute late: were the timeout not real, the call's 30 s deadline would
      // end it instead, with another message.
      fake.fail({ match: 'GET /repos/acme/api/issues/2', status: 200, delayMs: 60_000, times: 3 });
      const result = await slow.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/api', number: 2, comments: false },
      });
      expect(text(result)).toBe(
        'GitHub failed (504): it did not answer within 0.5 s (GITHUB_REQUEST_TIMEOUT_MS); this is not caused by your request. Try again later.',
      );
      // A read is tried three times, each ended by its own timeout.
      expect(fake.requests.slice(before)).toEqual(
        new Array(3).fill('GET /repos/acme/api/issues/2'),
      );
      expect(slow.records.at(-1)!.event.reason).toBe('upstream_error');
    } finally {
      await slow.close();
    }
  });

  it('says GitHub is unreachable when nothing answers', async () => {
    const gone = await startFake();
    const s = await connectGitHub(gone);
    await gone.close();
    try {
      const result = await s.client.callTool({
        name: 'github_list_issues',
        arguments: { repo: 'acme/api' },
      });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(/^GitHub failed \(50[03]\); this is not caused by your request/);
    } finally {
      await s.close();
    }
  });

  it('keeps a token of no known shape out of everything when GitHub echoes it back', async () => {
    // A classic token from before prefixes: 40 hex digits, nothing a pattern can recognise;
    // only the configured value identifies it.
    const hex = 'a3f1c9e07b2d4f6a8c1e3b5d7f9a0c2e4b6d8f01';
    const own = await startFake({ tokens: { [hex]: { login: 'octo', repos: ['acme/web'] } } });
    const s = await connectGitHub(own, { GITHUB_TOKEN: hex });
    try {
      own.fail({
        match: 'GET /repos/acme/api/issues',
        status: 422,
        message: `Validation failed for token ${hex} (${encodeURIComponent(hex)})`,
      });
      own.fail({
        match: 'GET /repos/acme/web/issues',
        status: 502,
        message: `upstream saw ${hex}`,
      });
      const results = [
        await s.client.callTool({ name: 'github_list_issues', arguments: { repo: 'acme/api' } }),
        await s.client.callTool({ name: 'github_list_issues', arguments: { repo: 'acme/web' } }),
      ];
      const everything = `${JSON.stringify(results)}\n${s.logs()}\n${JSON.stringify(s.records)}`;
      expect(text(results[0])).toContain('[REDACTED:GITHUB_TOKEN]');
      expect(everything).not.toContain(hex);
      expect(everything).not.toContain(hex.slice(0, 20));
    } finally {
      await s.close();
      await own.close();
    }
  });

  it('keeps the token out of every error, log line and audit record', async () => {
    fake.fail({ match: 'GET /repos/acme/api/issues', status: 500, times: 5 });
    await h.client.callTool({ name: 'github_list_issues', arguments: { repo: 'acme/api' } });
    const everything = `${h.logs()}\n${JSON.stringify(h.records)}`;
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(TOKEN.slice(0, 20));
  });
});

describe('the credential check at start', () => {
  const logger = createLogger({ level: 'silent' });
  const config = (env: Record<string, string>) =>
    loadConfig(GitHubConfigSchema, {
      GITHUB_TOKEN: TOKEN,
      GITHUB_API_URL: fake.url,
      GITHUB_REPOS: 'acme/api,acme/web',
      ...env,
    });

  it('reports what the credentials reach', async () => {
    const server = await startGitHubServer(
      config({ GITHUB_REPOS: 'acme/api,acme/web,acme/gone' }),
      {
        logger,
        pacing: FAST_PACING,
      },
    );
    const report = await server.verify();
    expect(report).toMatchObject({
      identity: 'octo',
      repos: [
        { repo: 'acme/api', visible: true, push: true },
        { repo: 'acme/web', visible: true, push: true },
        { repo: 'acme/gone', visible: false, push: false },
      ],
      warnings: ['acme/gone is not visible to the credentials'],
    });
  });

  it('refuses to start with rejected credentials, naming the variable', async () => {
    await expect(
      startGitHubServer(config({ GITHUB_TOKEN: 'ghp_wrong' }), { logger }),
    ).rejects.toMatchObject({
      name: 'ConfigError',
      problems: ['GITHUB_TOKEN: GitHub rejected the credentials (401)'],
    });
  });

  it('needs exactly one way to authenticate, said with the configuration', () => {
    const problems = (env: Record<string, string>): readonly string[] => {
      try {
        loadConfig(GitHubConfigSchema, {
          GITHUB_API_URL: fake.url,
          GITHUB_REPOS: 'acme/api',
          ...env,
        });
      } catch (error) {
        return (error as ConfigError).problems;
      }
      return [];
    };
    expect(problems({ GITHUB_TOKEN: TOKEN, GITHUB_APP_ID: '1' })).toEqual([
      expect.stringMatching(/^GITHUB_TOKEN: set either a token or the GitHub App variables/),
    ]);
    expect(problems({ GITHUB_APP_ID: '1' })).toEqual([
      expect.stringMatching(
        /^GITHUB_APP_ID: a GitHub App needs GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY/,
      ),
    ]);
    expect(problems({})).toEqual([expect.stringMatching(/^GITHUB_TOKEN: required/)]);
    // The gh CLI's name (and GitHub's own MCP server's) is found and named, never shown.
    const meant = problems({ GH_TOKEN: TOKEN, GITHUB_PERSONAL_ACCESS_TOKEN: TOKEN });
    expect(meant).toEqual([
      expect.stringMatching(
        /^GITHUB_TOKEN: required .*; GH_TOKEN and GITHUB_PERSONAL_ACCESS_TOKEN are set: did you mean GITHUB_TOKEN\?$/,
      ),
    ]);
    expect(meant.join('\n')).not.toContain(TOKEN);
  });

  it('explains a token of the wrong kind or wrapping without showing it', () => {
    const problem = (token: string): string => {
      try {
        loadConfig(GitHubConfigSchema, {
          GITHUB_API_URL: fake.url,
          GITHUB_REPOS: 'acme/api',
          GITHUB_TOKEN: token,
        });
      } catch (error) {
        return (error as ConfigError).problems.join('\n');
      }
      return '';
    };
    const cases: Array<[string, RegExp]> = [
      [
        'xoxb-1234-5678-abcdefghijkl',
        /this is not a GitHub token \(it looks like a Slack or Atlassian one\)/,
      ],
      ['hunter2-not-a-token', /not a GitHub token: one starts ghp_ \(classic\) or github_pat_/],
      [
        `Bearer ${TOKEN}`,
        /the value starts with an authorization scheme \(Bearer …\): set the token alone/,
      ],
      [`"${TOKEN}"`, /the value is wrapped in quotes/],
      [`${TOKEN} `, /the value starts or ends with spaces/],
      ['REPLACE-ME-fine-grained-github-token', /still a placeholder from an example/],
    ];
    for (const [token, expected] of cases) {
      const said = problem(token);
      expect(said, token).toMatch(new RegExp(`^GITHUB_TOKEN: ${expected.source}`));
      expect(said).not.toContain(token.trim().replace(/^"|"$/g, '').slice(0, 12));
    }
    expect(problem(TOKEN)).toBe('');
    expect(problem('a3f1c9e07b2d4f6a8c1e3b5d7f9a0c2e4b6d8f01')).toBe('');
  });

  it('warns about over-broad classic token scopes', async () => {
    const classic = await startFake({
      tokens: {
        ghp_classic: { login: 'octo', repos: '*', scopes: 'repo, delete_repo, admin:org' },
      },
    });
    try {
      const server = await startGitHubServer(
        loadConfig(GitHubConfigSchema, {
          GITHUB_TOKEN: 'ghp_classic',
          GITHUB_API_URL: classic.url,
          GITHUB_REPOS: 'acme/api',
        }),
        { logger },
      );
      const report = await server.verify();
      expect(report.scopes).toEqual(['repo', 'delete_repo', 'admin:org']);
      expect(report.warnings[0]).toMatch(
        /scopes this server never needs \(delete_repo, admin:org\)/,
      );
    } finally {
      await classic.close();
    }
  });
});

describe('other deployments', () => {
  it('works against GitHub Enterprise Server paths (/api/v3)', async () => {
    const ghes = await startGitHubFake({
      repos: githubSeed(),
      prefix: '/api/v3',
      tokens: { [TOKEN]: { login: 'octo', repos: [] } },
    });
    const s = await connectGitHub(ghes, { GITHUB_API_URL: ghes.url });
    try {
      expect(ghes.url).toMatch(/\/api\/v3$/);
      const result = await s.client.callTool({
        name: 'github_list_issues',
        arguments: { repo: 'acme/api', per_page: 2 },
      });
      expect(
        (unframed(result.structuredContent) as { next_cursor?: string }).next_cursor,
      ).toBeDefined();
      expect(ghes.requests.every((r) => r.includes(' /api/v3/'))).toBe(true);
    } finally {
      await s.close();
      expectValidResponses(ghes);
      await ghes.close();
    }
  });

  it('authenticates as a GitHub App installation', async () => {
    const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const appFake = await startGitHubFake({
      repos: githubSeed(),
      app: {
        id: 31337,
        publicKey: keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        installations: { 5: { login: 'gatehouse[bot]', repos: ['acme/web'], permission: 'write' } },
      },
    });
    const s = await connectGitHub(appFake, {
      GITHUB_TOKEN: '',
      GITHUB_APP_ID: '31337',
      GITHUB_APP_INSTALLATION_ID: '5',
      GITHUB_APP_PRIVATE_KEY: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      GATEHOUSE_ENABLE_WRITES: 'true',
    });
    try {
      const result = await s.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/web', number: 1 },
      });
      expect(unframed(result.structuredContent)).toMatchObject({ issue: { title: 'Dark mode' } });
      const created = await s.client.callTool({
        name: 'github_create_issue',
        arguments: { repo: 'acme/web', title: 'From the app' },
      });
      expect(created.isError).toBeFalsy();
      expect(appFake.repo('acme/web').issues.at(-1)!.user).toBe('gatehouse[bot]');
      expect(appFake.requests[0]).toBe('POST /app/installations/5/access_tokens');
    } finally {
      await s.close();
      expectValidResponses(appFake);
      await appFake.close();
    }
  });
});

describe("an answer GitHub's documentation does not describe", () => {
  it('is parsed once where it comes in, and refused as GitHub’s failure, naming where', () => {
    const odd = [{ number: 'seven', title: 'x' }];
    let caught: unknown;
    try {
      issuesOf(odd);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(UpstreamError);
    const message = (caught as UpstreamError).toolMessage();
    expect(message).toMatch(
      /^GitHub failed \(502\): an issue in its answer is not what GitHub documents \(0\.number\); this is not caused by your request/,
    );
  });
});
