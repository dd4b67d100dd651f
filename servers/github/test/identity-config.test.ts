// The GitHub server's user-mode settings (ADR 0026): where people authorize the app on
// github.com and on GitHub Enterprise Server, and which credentials each mode needs.
import { ConfigError, loadConfig } from '@gatehouse/core';
import { describe, expect, it } from 'vitest';
import { GitHubConfigSchema } from '../src/config.ts';
import { githubWebUrl } from '../src/identity.ts';
import { TOKEN } from './helpers.ts';

const USER = {
  GATEHOUSE_TRANSPORT: 'http',
  GATEHOUSE_PUBLIC_URL: 'https://github.mcp.example.com/mcp',
  GATEHOUSE_AUTH: 'api_key',
  GATEHOUSE_API_KEYS: JSON.stringify([
    { id: 'k1', sha256: 'a'.repeat(64), principal: 'ci-alice', scopes: ['github:read'] },
  ]),
  GATEHOUSE_IDENTITY: 'user',
  GATEHOUSE_VAULT_KEYS: `k1 ${Buffer.alloc(32, 1).toString('base64')}`,
  GATEHOUSE_GRANTS_FILE: '/var/lib/gatehouse/grants.json',
  GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=alice',
  GITHUB_OAUTH_CLIENT_ID: 'Iv23liExample',
  GITHUB_OAUTH_CLIENT_SECRET: 'example-client-secret',
  GITHUB_REPOS: 'acme/api',
};

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(GitHubConfigSchema, env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('the GitHub server in user mode', () => {
  it('sends people to github.com, or to the GitHub Enterprise host of the API', () => {
    const web = (env: Record<string, string>) =>
      githubWebUrl(loadConfig(GitHubConfigSchema, { ...USER, ...env }));
    expect(web({})).toBe('https://github.com');
    expect(web({ GITHUB_API_URL: 'https://ghe.example.com/api/v3' })).toBe(
      'https://ghe.example.com',
    );
    expect(web({ GITHUB_API_URL: 'https://ghe.example.com/api/v3/' })).toBe(
      'https://ghe.example.com',
    );
    expect(
      web({
        GITHUB_API_URL: 'https://ghe.example.com/api/v3',
        GITHUB_WEB_URL: 'https://code.example.com/',
      }),
    ).toBe('https://code.example.com');
  });

  it('needs no service token, unless a read falls back to it; needs the app’s OAuth client', () => {
    expect(problemsOf(USER)).toEqual([]);
    expect(
      problemsOf({ ...USER, GATEHOUSE_IDENTITY_READ_FALLBACK: 'github_search_issues' }),
    ).toEqual([
      expect.stringMatching(/^GITHUB_TOKEN: GATEHOUSE_IDENTITY_READ_FALLBACK falls back/),
    ]);
    expect(
      problemsOf({
        ...USER,
        GATEHOUSE_IDENTITY_READ_FALLBACK: 'github_search_issues',
        GITHUB_TOKEN: TOKEN,
      }),
    ).toEqual([]);
    const { GITHUB_OAUTH_CLIENT_SECRET: _secret, ...noSecret } = USER;
    expect(problemsOf(noSecret)).toEqual([
      expect.stringMatching(/^GITHUB_OAUTH_CLIENT_ID: user mode needs the GitHub App's client id/),
    ]);
    // Service mode still needs its credential.
    expect(problemsOf({ GITHUB_REPOS: 'acme/api' })).toEqual([
      expect.stringMatching(/^GITHUB_TOKEN: required/),
    ]);
  });
});
