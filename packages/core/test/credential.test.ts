// Which credential a call acts with upstream (ADR 0026, `credentialFor`): in user mode a caller
// who is not a person never reaches the service credential — not even through the operator's
// read fallback (CVE-2026-77254's class) — and a person without a grant reaches it only there.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConnectRequiredError,
  Keyring,
  Vault,
  credentialFor,
  fileGrantStore,
} from '../src/identity/index.js';
import type { Connect, UpstreamIdentity } from '../src/identity/index.js';
import { ANONYMOUS, localPrincipal } from '../src/principal.js';
import type { Principal } from '../src/principal.js';

const vault = new Vault(
  Keyring.parse(`k1 ${randomBytes(32).toString('base64')}`, 'test keys'),
  fileGrantStore(join(mkdtempSync(join(tmpdir(), 'credential-')), 'grants.json'), 'GRANTS'),
);
afterAll(() => vault.close());

const identity: UpstreamIdentity = {
  vendor: 'GitHub',
  upstream: 'github.com',
  server: 'gatehouse-github',
  vault,
  connect: {
    link: (_owner, id) => `https://mcp.example.com/connect/x/start?flow=${id}`,
  } as Connect,
  refresh: () => Promise.reject(new Error('not in this test')),
  revoke: () => Promise.resolve(),
  oauthIssuer: 'https://idp.example.com',
  readFallback: new Set(['github_search_issues']),
};
const SEARCH = { name: 'github_search_issues', access: 'read' } as const;
const COMMENT = { name: 'github_add_comment', access: 'write' } as const;
const person = (authMethod: Principal['authMethod'], id = 'ci-alice'): Principal => ({
  id,
  authMethod,
  scopes: ['*'],
});

const refusal = async (
  principal: Principal,
  tool: { readonly name: string; readonly access: 'read' | 'write' } = SEARCH,
) => {
  try {
    await credentialFor(identity, principal, tool);
  } catch (error) {
    if (error instanceof ConnectRequiredError) return error;
    throw error;
  }
  throw new Error('expected the call to be refused');
};

describe('the credential a call acts with', () => {
  it('is the service credential on a server with no per-person identity', async () => {
    expect(await credentialFor(undefined, ANONYMOUS, COMMENT)).toEqual({ kind: 'service' });
  });

  it('never lends the service credential to a caller who is not a person, fallback or not', async () => {
    for (const principal of [ANONYMOUS, localPrincipal('operator')]) {
      const error = await refusal(principal);
      expect(error.link).toBeUndefined();
      expect(error.message).toContain('not a person it can tell apart');
    }
    // A token principal with no configured issuer has no owner either.
    const noIssuer = { ...identity, oauthIssuer: undefined };
    await expect(credentialFor(noIssuer, person('oauth'), SEARCH)).rejects.toBeInstanceOf(
      ConnectRequiredError,
    );
  });

  it('lends it to a person without a grant only for the read the operator named', async () => {
    expect(await credentialFor(identity, person('api_key'), SEARCH)).toEqual({
      kind: 'service',
      fallback: true,
    });
    const write = await refusal(person('api_key'), COMMENT);
    expect(write.link?.url).toMatch(/^https:\/\/mcp\.example\.com\/connect\//);
    const otherRead = await refusal(person('oauth'), { name: 'github_get_issue', access: 'read' });
    expect(otherRead.link).toBeDefined();
  });

  it("acts with the person's own grant once they have one, the fallback unused", async () => {
    const owner = {
      server: 'gatehouse-github',
      issuer: 'api-key',
      subject: 'ci-bob',
      upstream: 'github.com',
    };
    const grant = {
      accessToken: 'ghu_test',
      account: { login: 'bob', id: '42' },
      obtainedAt: Date.now(),
    };
    await vault.put(owner, grant);
    expect(await credentialFor(identity, person('api_key', 'ci-bob'), SEARCH)).toEqual({
      kind: 'user',
      grant,
      owner,
    });
    // The same subject from another issuer is another person, with no grant.
    expect(await credentialFor(identity, person('oauth', 'ci-bob'), SEARCH)).toEqual({
      kind: 'service',
      fallback: true,
    });
  });
});
