import { loadConfig } from '@gatehouse/core';
import type { ConfigError } from '@gatehouse/core';
import { checkAtStart } from '@gatehouse/core/runtime';
import { captureLogger } from '@gatehouse/core/testing';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JiraConfigSchema } from '../src/config.ts';
import { createJiraServer } from '../src/server.ts';
import { EMAIL, TOKEN, connectJira, expectNoSchemaDrift, startFake, text } from './helpers.ts';
import type { JiraHarness } from './helpers.ts';

// Jira's failures as the model sees them, the rate-limit rule, the imposed timeout, and the
// start-up check.

/** The process's fetch before any Jira server exists: no server may replace it. */
const processFetch = globalThis.fetch;
let fake: JiraFake;
let h: JiraHarness;
beforeAll(async () => {
  fake = await startFake();
  h = await connectJira(fake);
});
afterAll(async () => {
  await h?.close();
  expectNoSchemaDrift();
  await fake?.close();
});
const get = (key = 'OPS-1', harness = h) =>
  harness.client.callTool({ name: 'jira_get_issue', arguments: { key, comments: 0 } });

describe("Jira's answers, mapped", () => {
  it('a missing issue', async () => {
    expect(text(await get('OPS-99'))).toBe(
      'Jira answered 404 (not found): no such issue or project, or this server cannot see it',
    );
  });

  it('a rate limit: waited out once when short, the wait in the error when long', async () => {
    fake.fail({ match: 'GET /rest/api/3/issue/OPS-1', status: 429, rateLimit: 'x', retryAfter: 2 });
    expect((await get()).isError).toBeFalsy();
    expect(h.logs()).toContain('Jira rate limit reached');
    fake.fail({
      match: 'GET /rest/api/3/issue/OPS-1',
      status: 429,
      rateLimit: 'x',
      retryAfter: 300,
    });
    expect(text(await get())).toBe('Jira rate limit reached. Retry after 300s.');
  });

  it('retries a read through a passing 5xx, without detail when it lasts', async () => {
    fake.fail({ match: 'GET /rest/api/3/issue/OPS-1', status: 503 });
    expect((await get()).isError).toBeFalsy();
    fake.fail({ match: 'GET /rest/api/3/issue/OPS-1', status: 500, times: 3 });
    expect(text(await get())).toBe(
      'Jira failed (500); this is not caused by your request. Try again later.',
    );
  });

  it('imposes JIRA_REQUEST_TIMEOUT_MS on jira.js, which has no timeout of its own', async () => {
    const slow = await connectJira(fake, { JIRA_REQUEST_TIMEOUT_MS: '500' });
    try {
      fake.fail({ match: 'GET /rest/api/3/issue/OPS-1', status: 200, delayMs: 60_000, times: 3 });
      expect(text(await get('OPS-1', slow))).toBe(
        'Jira failed (504): it did not answer within 0.5 s (JIRA_REQUEST_TIMEOUT_MS); this is not caused by your request. Try again later.',
      );
    } finally {
      await slow.close();
    }
  });

  it("leaves the process's fetch alone, and records Jira's request id of a failure", async () => {
    expect((await get()).isError).toBeFalsy();
    expect(globalThis.fetch).toBe(processFetch);
    await get('OPS-99');
    // The fake answers with an atl-traceid, as Jira does; the audit record keeps it for support.
    expect(h.records.at(-1)!.upstream).toMatchObject({
      status: 404,
      request_id: expect.stringMatching(/^[0-9a-f]+$/),
    });
  });

  it('never shows the token', async () => {
    fake.fail({ match: 'GET /rest/api/3/issue/OPS-2', status: 400, message: `bad token ${TOKEN}` });
    const result = await get('OPS-2');
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(h.logs()).not.toContain(TOKEN);
    expect(JSON.stringify(h.records)).not.toContain(TOKEN);
  });
});

describe('the start-up check', () => {
  const start = async (env: Record<string, string>, site = fake) => {
    const { logger, logs } = captureLogger();
    const config = loadConfig(JiraConfigSchema, {
      JIRA_URL: site.url,
      JIRA_PROJECTS: 'OPS,WEB',
      JIRA_EMAIL: EMAIL,
      JIRA_API_TOKEN: TOKEN,
      ...env,
    });
    await checkAtStart(createJiraServer(config, { logger }), logger);
    return logs;
  };

  it('refuses rejected credentials, naming the variable', async () => {
    await expect(start({ JIRA_API_TOKEN: 'wrong-token' })).rejects.toMatchObject({
      name: 'ConfigError',
      problems: ['JIRA_API_TOKEN: Jira rejected the credentials (401)'],
    });
  });

  it('reports the account and the permissions per project, warning about what is missing', async () => {
    const partial = await startFake({ denied: { WEB: ['CREATE_ISSUES', 'TRANSITION_ISSUES'] } });
    try {
      const logs = await start({}, partial);
      expect(logs()).toContain('"account":"Gatehouse Bot"');
      expect(logs()).toContain('WEB: the credentials lack CREATE_ISSUES, TRANSITION_ISSUES');
    } finally {
      await partial.close();
    }
  });

  it('needs exactly one way to authenticate, said with the configuration', () => {
    const problems = (env: Record<string, string>): readonly string[] => {
      try {
        loadConfig(JiraConfigSchema, { JIRA_URL: fake.url, JIRA_PROJECTS: 'OPS', ...env });
      } catch (error) {
        return (error as ConfigError).problems;
      }
      return [];
    };
    expect(problems({})).toEqual([
      'JIRA_API_TOKEN: required (with JIRA_EMAIL), or JIRA_OAUTH_TOKEN for OAuth 2.0',
    ]);
    // The name other Jira tools use, found and named; its value never shown.
    expect(problems({ JIRA_TOKEN: 'ATATT3xFfGF0-a-token' })).toEqual([
      'JIRA_API_TOKEN: required (with JIRA_EMAIL), or JIRA_OAUTH_TOKEN for OAuth 2.0; JIRA_TOKEN is set: did you mean JIRA_API_TOKEN?',
    ]);
    expect(problems({ JIRA_API_TOKEN: 'ATATT3xFfGF0-a-token' })).toEqual([
      'JIRA_EMAIL: required with JIRA_API_TOKEN (the account the token belongs to)',
    ]);
    const swapped = problems({ JIRA_OAUTH_TOKEN: 'ATATT3xFfGF0-a-token' });
    expect(swapped).toEqual([
      'JIRA_OAUTH_TOKEN: this looks like an Atlassian API token (ATATT…): set it as JIRA_API_TOKEN, with JIRA_EMAIL',
    ]);
    expect(swapped.join('\n')).not.toContain('ATATT3xFfGF0');
    expect(
      problems({
        JIRA_EMAIL: 'bot@acme.test',
        JIRA_API_TOKEN: 'x-token',
        JIRA_OAUTH_TOKEN: 'eyJx',
      }),
    ).toEqual([
      'JIRA_OAUTH_TOKEN: set either JIRA_EMAIL and JIRA_API_TOKEN or JIRA_OAUTH_TOKEN, not both',
    ]);
  });

  it('refuses a plain http:// site that is not loopback unless explicitly allowed', () => {
    const env = {
      JIRA_URL: 'http://jira.acme.test',
      JIRA_PROJECTS: 'OPS',
      JIRA_OAUTH_TOKEN: 'eyJ-token',
    };
    expect(() => loadConfig(JiraConfigSchema, env)).toThrow(
      /JIRA_URL: plain http:\/\/ to jira\.acme\.test would carry the credentials unencrypted/,
    );
    expect(
      loadConfig(JiraConfigSchema, { ...env, GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM: 'true' })
        .JIRA_URL,
    ).toBe('http://jira.acme.test');
  });
});
