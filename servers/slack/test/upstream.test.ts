import { unframed } from '@gatehouse/testkit';
import { ConfigError, loadConfig } from '@gatehouse/core';
import { checkAtStart } from '@gatehouse/core/runtime';
import { captureLogger } from '@gatehouse/core/testing';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SlackConfigSchema } from '../src/config.ts';
import { SLACK_SCOPES, createSlackServer } from '../src/server.ts';
import {
  READ,
  TOKEN,
  callsDuring,
  connectSlack,
  expectCleanFake,
  startFake,
  text,
} from './helpers.ts';
import type { SlackHarness } from './helpers.ts';

// Slack's ways of failing as the model sees them, the rate-limit rules, the timeout, the 2025
// limited mode and the start-up check.

let fake: SlackFake;
let h: SlackHarness;
beforeAll(async () => {
  fake = await startFake();
  h = await connectSlack(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});
afterAll(async () => {
  await h?.close();
  expectCleanFake(fake);
  await fake?.close();
});

const read = (channel = '#general', harness = h) =>
  harness.client.callTool({ name: 'slack_read_channel', arguments: { channel } });

describe("Slack's answers, mapped", () => {
  it.each([
    [
      'not_in_channel',
      {},
      'Slack answered 403 (access denied): the bot is not a member of this channel; invite it first (/invite @app)',
    ],
    [
      'channel_not_found',
      {},
      'Slack answered 404 (not found): the channel does not exist or the bot cannot see it',
    ],
    [
      'missing_scope',
      { needed: 'channels:history', provided: 'channels:read' },
      'Slack answered 403 (access denied): the Slack app lacks the scope channels:history; add it to the app and reinstall',
    ],
    [
      'invalid_auth',
      {},
      "Slack answered 401 (the server credentials were rejected): Slack rejected this server's bot token; the operator must renew it",
    ],
    ['is_archived', {}, 'Slack answered 409 (conflict): the channel is archived'],
    [
      'some_new_code',
      {},
      'Slack answered 400 (the request was invalid): Slack refused the call (some_new_code)',
    ],
  ])('%s → a clear message', async (code, extra, message) => {
    fake.platformError('conversations.history', code, extra);
    const result = await read();
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(message);
  });

  it('a rate limit with a long Retry-After: the wait in the error at once, never a queue pause', async () => {
    fake.fail({
      match: 'POST /conversations.history',
      status: 429,
      rateLimit: 'x',
      retryAfter: 120,
    });
    const calls = await callsDuring(fake, async () => {
      expect(text(await read())).toBe('Slack rate limit reached. Retry after 120s.');
    });
    expect(calls).toEqual(['conversations.history']);
    expect(h.records.at(-1)!.event.reason).toBe('rate_limited');
    // The client is not paused: the next call goes out at once.
    expect((await read()).isError).toBeFalsy();
  });

  it('a short rate limit is waited out once, within the deadline', async () => {
    fake.fail({ match: 'POST /conversations.history', status: 429, rateLimit: 'x', retryAfter: 2 });
    const calls = await callsDuring(fake, async () => {
      expect((await read()).isError).toBeFalsy();
    });
    expect(calls).toEqual(['conversations.history', 'conversations.history']);
    expect(h.logs()).toContain('Slack rate limit reached');
  });

  it('retries a read through a passing 5xx, and explains a lasting one without detail', async () => {
    fake.fail({ match: 'POST /conversations.history', status: 502 });
    expect((await read()).isError).toBeFalsy();
    // A read is tried three times (two retries), each failing here.
    fake.fail({ match: 'POST /conversations.history', status: 503, times: 3 });
    expect(text(await read())).toBe(
      'Slack failed (503); this is not caused by your request. Try again later.',
    );
  });

  it('ends a slow answer at SLACK_REQUEST_TIMEOUT_MS', async () => {
    const slow = await connectSlack(fake, { SLACK_REQUEST_TIMEOUT_MS: '500' });
    try {
      fake.fail({ match: 'POST /conversations.history', status: 200, delayMs: 60_000, times: 3 });
      expect(text(await read('#general', slow))).toBe(
        'Slack failed (504): it did not answer within 0.5 s (SLACK_REQUEST_TIMEOUT_MS); this is not caused by your request. Try again later.',
      );
    } finally {
      await slow.close();
    }
  });

  it('never sends the token anywhere but Slack, and never shows it', async () => {
    fake.platformError('conversations.history', 'invalid_auth', { provided: TOKEN });
    const result = await read();
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(h.logs()).not.toContain(TOKEN);
    expect(JSON.stringify(h.records)).not.toContain(TOKEN);
  });
});

describe("Slack's 2025 limits for non-Marketplace apps (SLACK_HISTORY_LIMITED)", () => {
  it('reads at most 15 messages a page and one history call a minute, saying when to retry', async () => {
    const limited = await connectSlack(fake, { SLACK_HISTORY_LIMITED: 'true' });
    try {
      const before = fake.requests.length;
      const first = await limited.client.callTool({
        name: 'slack_read_channel',
        arguments: { channel: '#general', limit: 100 },
      });
      expect(first.isError).toBeFalsy();
      expect(fake.requests.slice(before).length).toBeGreaterThan(0);
      const second = await read('#incidents', limited);
      // Our own pacing, in our words: Slack was not asked, so Slack is not blamed.
      expect(text(second)).toMatch(
        /^This server reads channel history at most once a minute \(SLACK_HISTORY_LIMITED: Slack's limit for apps outside the Marketplace\)\. Retry after (59|60)s\.$/,
      );
    } finally {
      await limited.close();
    }
  });

  it('never blocks a post: within a minute of a read it posts, and says the duplicate check was skipped', async () => {
    const limited = await connectSlack(fake, {
      SLACK_HISTORY_LIMITED: 'true',
      GATEHOUSE_ENABLE_WRITES: 'true',
    });
    try {
      expect((await read('#incidents', limited)).isError).toBeFalsy();
      const post = () =>
        limited.client.callTool({
          name: 'slack_post_message',
          arguments: { channel: '#incidents', text: 'rollback done' },
        });
      const posted = await post();
      expect(posted.isError).toBeFalsy();
      expect(text(posted)).toMatch(
        /^Posted \(the duplicate check was skipped: this app may read history once a minute \(SLACK_HISTORY_LIMITED\); if this was a retry, look for the message twice\) to #incidents/,
      );
      expect(text(posted)).not.toMatch(/rate limit/i);
      // The same post again in the window: this process remembers its own, without reading.
      const requests = fake.requests.length;
      const again = await post();
      expect(unframed(again.structuredContent)).toMatchObject({ deduplicated: true });
      expect(fake.requests.slice(requests)).toEqual([]);
    } finally {
      await limited.close();
    }
  });
});

describe('the start-up check', () => {
  const config = (env: Record<string, string> = {}) =>
    loadConfig(SlackConfigSchema, {
      SLACK_BOT_TOKEN: TOKEN,
      SLACK_API_URL: fake.url,
      SLACK_READ_CHANNELS: READ,
      ...env,
    });
  const start = async (env: Record<string, string> = {}) => {
    const { logger, logs } = captureLogger();
    const definition = createSlackServer(config(env), { logger });
    await checkAtStart(definition, logger);
    return logs;
  };

  it('refuses a rejected token, naming the variable', async () => {
    await expect(start({ SLACK_BOT_TOKEN: 'xoxb-rejected-token-000000' })).rejects.toMatchObject({
      name: 'ConfigError',
      problems: [expect.stringMatching(/^SLACK_BOT_TOKEN: Slack rejected the bot token/)],
    });
  });

  it('explains a token of another kind by its prefix, never showing it, and finds SLACK_TOKEN', () => {
    const problems = (env: Record<string, string>): readonly string[] => {
      try {
        loadConfig(SlackConfigSchema, {
          SLACK_API_URL: fake.url,
          SLACK_READ_CHANNELS: READ,
          ...env,
        });
      } catch (error) {
        if (error instanceof ConfigError) return error.problems;
        throw error;
      }
      return [];
    };
    const user = 'xoxp-1111-2222-3333-abcdefabcdef';
    expect(problems({ SLACK_BOT_TOKEN: user })).toEqual([
      'SLACK_BOT_TOKEN: expected the bot token, which starts xoxb- (OAuth & Permissions → Bot User OAuth Token); this is a user token (xoxp-): the server acts as the app’s bot, so use its bot token',
    ]);
    expect(problems({ SLACK_BOT_TOKEN: 'xoxe.xoxb-1-rotating' })[0]).toMatch(
      /this is a rotating token \(xoxe\), which expires within 12 hours/,
    );
    expect(problems({ SLACK_BOT_TOKEN: 'xapp-1-A111-222-abc' })[0]).toMatch(/an app-level token/);
    expect(problems({ SLACK_TOKEN: TOKEN })).toEqual([
      'SLACK_BOT_TOKEN: required (set SLACK_BOT_TOKEN or SLACK_BOT_TOKEN_FILE); SLACK_TOKEN is set: did you mean SLACK_BOT_TOKEN?',
    ]);
    expect(JSON.stringify(problems({ SLACK_BOT_TOKEN: user }))).not.toContain(user.slice(5));
  });

  it('reports what the bot can read and post, and warns about what it cannot', async () => {
    const logs = await start({
      GATEHOUSE_ENABLE_WRITES: 'true',
      SLACK_POST_CHANNELS: '#incidents',
      SLACK_READ_CHANNELS: `${READ},#no-such-channel`,
    });
    expect(logs()).toContain('"msg":"Slack access checked"');
    expect(logs()).toContain('{"channel":"#incidents","read":true,"post":true}');
    expect(logs()).toContain('#no-such-channel is not a channel the bot can see');
    expect(logs()).toContain('the bot is not a member of #random: invite it to read it');
  });

  it('warns about scopes the server never uses', async () => {
    const broad = await startFake([
      'channels:read',
      'channels:history',
      'chat:write',
      'chat:write.public',
      'admin',
    ]);
    try {
      const { logger, logs } = captureLogger();
      const definition = createSlackServer(config({ SLACK_API_URL: broad.url }), { logger });
      await checkAtStart(definition, logger);
      // Read-only, no DMs: chat:write is unused too.
      expect(logs()).toContain(
        'the bot token has scopes this configuration never uses (chat:write, chat:write.public, admin)',
      );
    } finally {
      await broad.close();
    }
  });

  it('follows the configuration: DM scopes are unused without SLACK_ALLOW_DMS, chat:write without writes', async () => {
    const all = await startFake(SLACK_SCOPES);
    try {
      const warned = async (env: Record<string, string>) => {
        const { logger, logs } = captureLogger();
        await checkAtStart(
          createSlackServer(config({ SLACK_API_URL: all.url, ...env }), { logger }),
          logger,
        );
        return /scopes this configuration never uses \(([^)]*)\)/.exec(logs())?.[1] ?? '';
      };
      expect(await warned({})).toBe('chat:write, im:read, im:history, mpim:read, mpim:history');
      expect(await warned({ SLACK_ALLOW_DMS: 'true' })).toBe('chat:write');
      expect(
        await warned({
          SLACK_ALLOW_DMS: 'true',
          GATEHOUSE_ENABLE_WRITES: 'true',
          SLACK_POST_CHANNELS: '#incidents',
        }),
      ).toBe('');
    } finally {
      await all.close();
    }
  });

  it('warns at start about a channel to post to that is not one to read, and leaves it out', async () => {
    const logs = await start({
      SLACK_READ_CHANNELS: '#general',
      GATEHOUSE_ENABLE_WRITES: 'true',
      SLACK_POST_CHANNELS: '#general,#incidents',
    });
    expect(logs()).toMatch(
      /"channels":\["#incidents"\].*SLACK_POST_CHANNELS: channels not in SLACK_READ_CHANNELS are left out/,
    );
  });

  it('refuses to start when none of the channels to read is one the bot can see', async () => {
    await expect(start({ SLACK_READ_CHANNELS: '#nope,C0NOTLISTED' })).rejects.toBeInstanceOf(
      ConfigError,
    );
  });
});

describe('the channel directory', () => {
  it('keeps the last good directory when a refresh fails, and tries again a minute later, not every call', async () => {
    const h = await connectSlack(fake);
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now + 11 * 60_000);
    try {
      fake.fail({ match: 'POST /conversations.list', status: 503, times: 3 });
      const lists = () => fake.requests.filter((r) => r.includes('conversations.list')).length;
      const before = lists();
      const first = await read('#incidents', h);
      expect(first.isError).toBeFalsy();
      expect(lists()).toBeGreaterThan(before);
      const tried = lists();
      expect((await read('#general', h)).isError).toBeFalsy();
      expect(lists()).toBe(tried);
      expect(h.logs()).toContain(
        'the channel directory could not be refreshed: the last one is kept',
      );
    } finally {
      clock.mockRestore();
      await h.close();
    }
  });
});
