// The Slack server's user-mode settings (ADR 0026): which credentials each mode needs, the
// workspace people link accounts of, and the attribution line's place.
import { ConfigError, loadConfig } from '@gatehouse/core';
import { describe, expect, it } from 'vitest';
import { SlackConfigSchema } from '../src/config.ts';
import { slackTokenAnswer } from '../src/identity.ts';
import { TOKEN } from './helpers.ts';

const USER = {
  GATEHOUSE_TRANSPORT: 'http',
  GATEHOUSE_PUBLIC_URL: 'https://slack.mcp.example.com/mcp',
  GATEHOUSE_AUTH: 'api_key',
  GATEHOUSE_API_KEYS: JSON.stringify([
    { id: 'k1', sha256: 'a'.repeat(64), principal: 'ci-alice', scopes: ['slack:read'] },
  ]),
  GATEHOUSE_IDENTITY: 'user',
  GATEHOUSE_VAULT_KEYS: `k1 ${Buffer.alloc(32, 1).toString('base64')}`,
  GATEHOUSE_GRANTS_FILE: '/var/lib/gatehouse/grants.json',
  GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=U0ALICE001',
  SLACK_OAUTH_CLIENT_ID: '1111111111.2222222222',
  SLACK_OAUTH_CLIENT_SECRET: 'example-client-secret',
  SLACK_TEAM_ID: 'T0ACME0001',
  SLACK_READ_CHANNELS: '#general',
};

function problemsOf(env: Record<string, string | undefined>): readonly string[] {
  try {
    loadConfig(
      SlackConfigSchema,
      Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<
        string,
        string
      >,
    );
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('the Slack server in user mode', () => {
  it('needs no bot token unless a read falls back to the bot', () => {
    expect(problemsOf(USER)).toEqual([]);
    expect(
      problemsOf({ ...USER, GATEHOUSE_IDENTITY_READ_FALLBACK: 'slack_list_channels' }),
    ).toEqual([
      'SLACK_BOT_TOKEN: GATEHOUSE_IDENTITY_READ_FALLBACK falls back to the bot, so its token is required',
    ]);
    expect(
      problemsOf({
        ...USER,
        GATEHOUSE_IDENTITY_READ_FALLBACK: 'slack_list_channels',
        SLACK_BOT_TOKEN: TOKEN,
      }),
    ).toEqual([]);
  });

  it("needs the app's client and the workspace, and says where to find them", () => {
    expect(problemsOf({ ...USER, SLACK_OAUTH_CLIENT_SECRET: undefined })).toEqual([
      "SLACK_OAUTH_CLIENT_ID: user mode needs the Slack app's client id and SLACK_OAUTH_CLIENT_SECRET (Basic Information → App Credentials)",
    ]);
    expect(problemsOf({ ...USER, SLACK_TEAM_ID: undefined })).toEqual([
      'SLACK_TEAM_ID: user mode needs the workspace’s id (T…): a person may link an account of this workspace only',
    ]);
    expect(problemsOf({ ...USER, SLACK_OAUTH_CLIENT_ID: 'xoxp-1-nope' })[0]).toMatch(
      /^SLACK_OAUTH_CLIENT_ID: expected the Slack app's client id/,
    );
  });

  it('keeps the attribution line to one line of plain text, and to user mode', () => {
    expect(problemsOf({ ...USER, SLACK_ATTRIBUTION: 'Sent by the assistant' })).toEqual([]);
    expect(problemsOf({ ...USER, SLACK_ATTRIBUTION: 'see <!channel>' })[0]).toMatch(
      /^SLACK_ATTRIBUTION: expected one line of plain text/,
    );
    expect(problemsOf({ ...USER, SLACK_ATTRIBUTION: 'two\nlines' })[0]).toMatch(
      /^SLACK_ATTRIBUTION: expected one line of plain text/,
    );
    expect(
      problemsOf({
        SLACK_BOT_TOKEN: TOKEN,
        SLACK_READ_CHANNELS: '#general',
        SLACK_ATTRIBUTION: 'x',
      }),
    ).toEqual([
      'SLACK_ATTRIBUTION: only means something with GATEHOUSE_IDENTITY=user (the bot’s posts already show the app)',
    ]);
  });

  it("reads Slack's token answers as OAuth 2 spells them", () => {
    expect(
      slackTokenAnswer({
        ok: true,
        access_token: 'xoxb-bot',
        authed_user: {
          id: 'U1',
          access_token: 'xoxe.xoxp-1-a',
          refresh_token: 'xoxe-1-r',
          expires_in: 43200,
        },
      }),
    ).toEqual({
      id: 'U1',
      access_token: 'xoxe.xoxp-1-a',
      refresh_token: 'xoxe-1-r',
      expires_in: 43200,
      token_type: 'bearer',
    });
    expect(slackTokenAnswer({ ok: false, error: 'invalid_refresh_token' })).toEqual({
      error: 'invalid_grant',
    });
    expect(slackTokenAnswer({ ok: false })).toEqual({ error: 'server_error' });
  });
});
