import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { connectHttp, initializeRequest, spawnServer, startTestIssuer } from '@gatehouse/testkit';
import type { ServerProcess, TestIssuer } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSchemaValid } from './schema.ts';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
const RESOURCE = 'https://mcp.test.example/mcp';
const API_KEY = 'gh-test-api-key-0123456789abcdef';

let issuer: TestIssuer;
let server: ServerProcess;
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  issuer = await startTestIssuer();
  server = await spawnServer(process.execPath, [demoServer], {
    env: {
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_PORT: '0',
      GATEHOUSE_ENABLE_WRITES: 'true',
      GATEHOUSE_AUTH: 'oauth,api_key',
      GATEHOUSE_PUBLIC_URL: RESOURCE,
      GATEHOUSE_OAUTH_ISSUER: issuer.issuer,
      GATEHOUSE_OAUTH_JWKS_URL: issuer.jwksUrl,
      GATEHOUSE_API_KEYS: JSON.stringify([
        {
          id: 'ci-key-1',
          sha256: createHash('sha256').update(API_KEY).digest('hex'),
          principal: 'ci-bot',
          scopes: ['demo:read'],
        },
      ]),
    },
  });
});

afterAll(async () => {
  await server?.stop();
  await issuer?.close();
});

const claims = (extra: Record<string, unknown> = {}) => ({
  iss: issuer.issuer,
  aud: RESOURCE,
  sub: 'alice@example.com',
  scope: 'demo:read',
  exp: now() + 300,
  iat: now(),
  jti: 'jti-alice-1',
  ...extra,
});

async function post(authorization: string | undefined, body: unknown = initializeRequest()) {
  const response = await fetch(server.url!, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    body: await response.text(),
  };
}

const metadataUrl = 'https://mcp.test.example/.well-known/oauth-protected-resource/mcp';

describe('OAuth key rotation', () => {
  // Runs first: jose refetches the JWKS for an unknown key id at most every 30 s, and the
  // table below presents an unknown key id on purpose.
  it('follows key rotation: a token signed by a new key is accepted after a JWKS refetch', async () => {
    const before = issuer.jwksFetches;
    const kid = await issuer.rotate();
    const response = await post(`Bearer ${await issuer.mint(claims(), { kid })}`);
    expect(response.status).toBe(200);
    expect(issuer.jwksFetches).toBe(before + 1);
    // And the cache holds: another call with the same key does not refetch.
    expect((await post(`Bearer ${await issuer.mint(claims(), { kid })}`)).status).toBe(200);
    expect(issuer.jwksFetches).toBe(before + 1);
  });
});

describe('HTTP authentication: each case with its exact status and header', () => {
  const tokens: string[] = [];
  const bearer = async (
    c: Record<string, unknown>,
    options?: Parameters<TestIssuer['mint']>[1],
  ) => {
    const token = await issuer.mint(claims(c), options);
    tokens.push(token);
    return `Bearer ${token}`;
  };

  const cases: Array<[string, () => Promise<string | undefined>, number, string | null]> = [
    [
      'missing',
      async () => undefined,
      401,
      `Bearer realm="gatehouse", resource_metadata="${metadataUrl}"`,
    ],
    ['malformed', async () => 'Basic YWxpY2U6c2VjcmV0', 400, null],
    [
      'expired',
      () => bearer({ exp: now() - 120, iat: now() - 600 }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="token expired", resource_metadata="${metadataUrl}"`,
    ],
    [
      'not yet valid',
      () => bearer({ nbf: now() + 600 }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="token not yet valid", resource_metadata="${metadataUrl}"`,
    ],
    [
      'empty subject',
      () => bearer({ sub: '' }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="the token has no usable subject (sub must be a non-empty string)", resource_metadata="${metadataUrl}"`,
    ],
    [
      'blank subject',
      () => bearer({ sub: '   ' }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="the token has no usable subject (sub must be a non-empty string)", resource_metadata="${metadataUrl}"`,
    ],
    [
      'numeric subject',
      () => bearer({ sub: 42 }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="the token has no usable subject (sub must be a non-empty string)", resource_metadata="${metadataUrl}"`,
    ],
    [
      'wrong issuer',
      () => bearer({ iss: 'https://evil.example/' }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="wrong issuer", resource_metadata="${metadataUrl}"`,
    ],
    [
      'wrong audience',
      () => bearer({ aud: 'https://other-server.example/mcp' }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="wrong audience (not issued for this server)", resource_metadata="${metadataUrl}"`,
    ],
    [
      'wrong signature',
      async () => {
        const token = await issuer.mint(claims());
        const [h, p, s] = token.split('.');
        return `Bearer ${h}.${p}.${s!.startsWith('A') ? `B${s!.slice(1)}` : `A${s!.slice(1)}`}`;
      },
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="signature does not verify", resource_metadata="${metadataUrl}"`,
    ],
    [
      'unknown key id',
      () => bearer({}, { unpublished: true }),
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="unknown key id", resource_metadata="${metadataUrl}"`,
    ],
    [
      'unknown API key',
      async () => 'Bearer not-a-configured-key',
      401,
      `Bearer realm="gatehouse", error="invalid_token", error_description="unknown API key", resource_metadata="${metadataUrl}"`,
    ],
  ];
  it.each(cases)('%s', async (_case, authorization, status, challenge) => {
    const response = await post(await authorization());
    expect(response.status).toBe(status);
    expect(response.challenge).toBe(challenge);
  });

  it('insufficient scope → 403 naming the missing scope', async () => {
    const response = await post(await bearer({ scope: 'demo:read' }), {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'demo_post', arguments: { message: 'hi' } },
    });
    expect(response.status).toBe(403);
    expect(response.challenge).toBe(
      `Bearer realm="gatehouse", error="insufficient_scope", error_description="demo_post needs the scope demo:write", scope="demo:write", resource_metadata="${metadataUrl}"`,
    );
  });

  it.each([
    [
      'a prompt get',
      {
        method: 'prompts/get',
        params: { name: 'demo_summarise', arguments: { board: 'general' } },
      },
      'prompts/get demo_summarise needs the scope demo:prompts',
      'demo:prompts',
    ],
    [
      'a prompt completion',
      {
        method: 'completion/complete',
        params: {
          ref: { type: 'ref/prompt', name: 'demo_summarise' },
          argument: { name: 'board', value: 'g' },
        },
      },
      'completion/complete demo_summarise needs the scope demo:prompts',
      'demo:prompts',
    ],
    [
      'a resource read',
      { method: 'resources/read', params: { uri: 'demo://boards/general' } },
      'resources/read demo://boards/general needs the scope demo:read',
      'demo:read',
    ],
    [
      'a tool call inside a batch',
      [
        { jsonrpc: '2.0', id: 8, method: 'tools/list' },
        { method: 'tools/call', params: { name: 'demo_post', arguments: { message: 'x' } } },
      ],
      'demo_post needs the scope demo:write',
      'demo:write',
    ],
  ])(
    'insufficient scope for %s → 403 before anything runs, audited',
    async (_n, request, description, scope) => {
      const body = Array.isArray(request)
        ? request.map((r, i) => ({ jsonrpc: '2.0', id: 20 + i, ...r }))
        : { jsonrpc: '2.0', id: 4, ...request };
      const response = await post(
        await bearer({ scope: scope === 'demo:read' ? 'other:read' : 'demo:read' }),
        body,
      );
      expect(response.status).toBe(403);
      expect(response.challenge).toBe(
        `Bearer realm="gatehouse", error="insufficient_scope", error_description="${description}", scope="${scope}", resource_metadata="${metadataUrl}"`,
      );
      await expect
        .poll(() =>
          server
            .auditRecords()
            .some(
              (r) =>
                r.event.reason === 'denied' &&
                r.policy?.rule === 'scope' &&
                r.error?.message === `the principal lacks the scope ${scope}`,
            ),
        )
        .toBe(true);
    },
  );

  it('valid token and valid API key → served, with the principal from the credential', async () => {
    for (const authorization of [
      await bearer({ scope: 'demo:read demo:write' }),
      `Bearer ${API_KEY}`,
    ]) {
      const response = await post(authorization);
      expect(response.status).toBe(200);
    }
    const records = server.auditRecords();
    const failures = records.filter((r) => r.event.action === 'gatehouse/auth_failure');
    expect(failures.length).toBeGreaterThanOrEqual(9);
    expect(failures.map((r) => r.gatehouse.description)).toContain('token expired');
    const denied = records.find(
      (r) => r.event.action === 'tools/call' && r.policy?.rule === 'scope',
    );
    expect(denied).toMatchObject({
      user: { id: 'alice@example.com' },
      auth: { method: 'oauth', credential_id: 'jti-alice-1' },
    });
    // No credential ever appears in the audit trail or the log.
    const everything = JSON.stringify(records) + JSON.stringify(server.logs) + server.stdout();
    for (const token of [...tokens, API_KEY]) expect(everything).not.toContain(token);
    expectSchemaValid(records);
  });

  it('serves RFC 9728 metadata at the well-known paths', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      const response = await fetch(new URL(path, server.url));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource: RESOURCE,
        authorization_servers: [issuer.issuer],
        scopes_supported: ['demo:read', 'demo:write'],
        bearer_methods_supported: ['header'],
        resource_name: 'Demo',
      });
    }
  });
});

describe('a real MCP client with credentials', () => {
  it('sees and calls only what its scopes allow', async () => {
    const readOnly = await connectHttp(server.url!, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    const names = (await readOnly.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('demo_echo');
    expect(names).not.toContain('demo_post');
    const echoed = await readOnly.client.callTool({
      name: 'demo_echo',
      arguments: { text: 'as ci-bot' },
    });
    expect(echoed.content).toEqual([{ type: 'text', text: 'as ci-bot' }]);
    await expect(
      readOnly.client.callTool({ name: 'demo_post', arguments: { message: 'x' } }),
    ).rejects.toThrow();
    await readOnly.close();

    const writer = await connectHttp(server.url!, {
      era: 'modern',
      headers: {
        authorization: `Bearer ${await issuer.mint(claims({ scope: 'demo:read demo:write' }))}`,
      },
    });
    expect((await writer.client.listTools()).tools.map((t) => t.name)).toContain('demo_post');
    const posted = await writer.client.callTool({
      name: 'demo_post',
      arguments: { message: 'hello' },
    });
    expect(posted.content).toEqual([{ type: 'text', text: 'posted 5 characters' }]);
    await writer.close();
    const call = server
      .auditRecords()
      .find((r) => r.mcp?.name === 'demo_post' && r.event.outcome === 'success');
    expect(call).toMatchObject({ user: { id: 'alice@example.com' }, auth: { method: 'oauth' } });
  });
});
