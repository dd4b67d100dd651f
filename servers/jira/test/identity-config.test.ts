// The Jira server's user-mode settings (ADR 0026): the 3LO app's client, and a service account
// only when a read falls back to it.
import { ConfigError, loadConfig } from '@gatehouse/core';
import { expect, it } from 'vitest';
import { JiraConfigSchema } from '../src/config.ts';
import { EMAIL, TOKEN } from './helpers.ts';

const USER: Record<string, string> = {
  GATEHOUSE_TRANSPORT: 'http',
  GATEHOUSE_PUBLIC_URL: 'https://jira.mcp.example.com/mcp',
  GATEHOUSE_AUTH: 'api_key',
  GATEHOUSE_API_KEYS: JSON.stringify([
    { id: 'k1', sha256: 'a'.repeat(64), principal: 'ci-alice', scopes: ['jira:read'] },
  ]),
  GATEHOUSE_IDENTITY: 'user',
  GATEHOUSE_VAULT_KEYS: `k1 ${Buffer.alloc(32, 1).toString('base64')}`,
  GATEHOUSE_GRANTS_FILE: '/var/lib/gatehouse/grants.json',
  GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=557058:alice',
  JIRA_URL: 'https://acme.atlassian.net',
  JIRA_PROJECTS: 'OPS',
  JIRA_OAUTH_CLIENT_ID: 'atlClientExample01',
  JIRA_OAUTH_CLIENT_SECRET: 'example-secret',
};

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(JiraConfigSchema, env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

it('needs the 3LO client in user mode, and the service account only for a fallback', () => {
  expect(problemsOf(USER)).toEqual([]);
  const { JIRA_OAUTH_CLIENT_SECRET: _, ...noSecret } = USER;
  expect(problemsOf(noSecret)).toEqual([
    "JIRA_OAUTH_CLIENT_ID: user mode needs the Atlassian OAuth 2.0 (3LO) app's client id and JIRA_OAUTH_CLIENT_SECRET (developer.atlassian.com → your app → Settings)",
  ]);
  const fallback = { ...USER, GATEHOUSE_IDENTITY_READ_FALLBACK: 'jira_search_issues' };
  expect(problemsOf(fallback)).toEqual([
    'JIRA_API_TOKEN: GATEHOUSE_IDENTITY_READ_FALLBACK falls back to the service account, so its credentials are required (with JIRA_EMAIL, or JIRA_OAUTH_TOKEN)',
  ]);
  expect(problemsOf({ ...fallback, JIRA_EMAIL: EMAIL, JIRA_API_TOKEN: TOKEN })).toEqual([]);
});
