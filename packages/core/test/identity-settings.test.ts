// The operator's variables of the identity mode (ADR 0026): each missing piece is named in the
// one configuration voice, and nothing about user mode is half-configured at start.
import { ConfigError, defineConfig, loadConfig } from '@gatehouse/core';
import { identityCheck, identityShape } from '@gatehouse/core/identity';
import { describe, expect, it } from 'vitest';

const schema = defineConfig({ ...identityShape }, { checks: [identityCheck] });

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

const HTTP = {
  GATEHOUSE_TRANSPORT: 'http',
  GATEHOUSE_PUBLIC_URL: 'https://mcp.example.com/mcp',
  GATEHOUSE_ALLOWED_HOSTS: 'mcp.example.com',
  GATEHOUSE_HOST: '0.0.0.0',
  GATEHOUSE_AUTH: 'api_key',
  GATEHOUSE_API_KEYS: JSON.stringify([
    { id: 'k1', sha256: 'a'.repeat(64), principal: 'ci-alice', scopes: ['x:read'] },
  ]),
};
const USER = {
  ...HTTP,
  GATEHOUSE_IDENTITY: 'user',
  GATEHOUSE_VAULT_KEYS: `k1 ${Buffer.alloc(32, 7).toString('base64')}`,
  GATEHOUSE_GRANTS_FILE: '/var/lib/gatehouse/grants.json',
  GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=alice',
};

describe('the identity mode’s configuration', () => {
  it('defaults to the service credential, and accepts a complete user mode', () => {
    expect(loadConfig(schema, {}).GATEHOUSE_IDENTITY).toBe('service');
    expect(problemsOf(USER)).toEqual([]);
  });

  it('refuses user mode over stdio, or with callers it cannot tell apart', () => {
    expect(problemsOf({ GATEHOUSE_IDENTITY: 'user' })).toEqual([
      expect.stringMatching(/^GATEHOUSE_TRANSPORT: acting as each person upstream needs the HTTP/),
    ]);
    expect(
      problemsOf({ ...USER, GATEHOUSE_AUTH: 'none', GATEHOUSE_HOST: '127.0.0.1' }),
    ).toContainEqual(expect.stringMatching(/^GATEHOUSE_AUTH: user mode acts as each person/));
  });

  it('names each missing piece: the keys, a place for grants, the IdP client, the logins', () => {
    const { GATEHOUSE_VAULT_KEYS: _k, GATEHOUSE_GRANTS_FILE: _g, ...bare } = USER;
    expect(
      problemsOf({ ...bare, GATEHOUSE_AUTH: 'api_key,oauth', GATEHOUSE_IDENTITY_LOGINS: '' }),
    ).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^GATEHOUSE_VAULT_KEYS: /),
        expect.stringMatching(/^GATEHOUSE_GRANTS_FILE: user mode needs a place/),
        expect.stringMatching(/^GATEHOUSE_CONNECT_CLIENT_ID: /),
        expect.stringMatching(/^GATEHOUSE_IDENTITY_LOGINS: /),
      ]),
    );
    // Redis keeps the grants of replicas: a file as well would split them.
    expect(problemsOf({ ...USER, GATEHOUSE_REDIS_URL: 'redis://127.0.0.1:6379' })).toEqual([
      expect.stringMatching(/^GATEHOUSE_GRANTS_FILE: with GATEHOUSE_REDIS_URL/),
    ]);
  });

  it('refuses a read fallback outside user mode, and malformed login pairs', () => {
    expect(problemsOf({ GATEHOUSE_IDENTITY_READ_FALLBACK: 'x_read' })).toEqual([
      'GATEHOUSE_IDENTITY_READ_FALLBACK: only means something with GATEHOUSE_IDENTITY=user',
    ]);
    expect(problemsOf({ ...USER, GATEHOUSE_IDENTITY_LOGINS: 'ci-alice' })).toEqual([
      expect.stringMatching(/^GATEHOUSE_IDENTITY_LOGINS: expected principal=login pairs/),
    ]);
  });

  it('checks the vault keys at start, and never repeats one in a problem', () => {
    const key = Buffer.alloc(32, 9).toString('base64').replace(/=+$/, '');
    // Written the wrong way round: the key where its id should be.
    const problems = problemsOf({ ...USER, GATEHOUSE_VAULT_KEYS: `${key.slice(0, 20)} k1` });
    expect(problems).toEqual([
      expect.stringMatching(/^GATEHOUSE_VAULT_KEYS: the keys, line 1: the key is not 32 bytes/),
    ]);
    expect(problems.join('\n')).not.toContain(key.slice(0, 20));
  });
});
