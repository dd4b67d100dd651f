// Bound tool parameters (ToolDefinition `bound`, pipeline/bound.ts): the caller's values reach
// the handler from the principal only — never from arguments, in any spelling, nor from _meta —
// a caller without the value is refused before anything runs, and the record keeps hashes.
import { createHash } from 'node:crypto';
import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import {
  baseConfigSchema,
  defineServer,
  defineTool,
  loadConfig,
  READ_ONLY_ANNOTATIONS,
} from '@gatehouse/core';
import type { Principal } from '@gatehouse/core';
import { createAuthenticator } from '@gatehouse/core/runtime';
import { createTestHarness } from '@gatehouse/core/testing';
import { connectInMemory, resultText } from '@gatehouse/testkit';
import * as z from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { expectSchemaValid } from './schema.ts';

const seen: Array<Readonly<Record<string, unknown>>> = [];
const definition = defineServer({
  name: 'bound-test',
  version: '1',
  tools: [
    defineTool({
      name: 'demo_my_rows',
      title: 'My rows',
      description: 'Rows of the caller.',
      access: 'read',
      annotations: READ_ONLY_ANNOTATIONS,
      input: z.strictObject({
        limit: z.number().int().min(1).max(10).optional().describe('How many rows'),
      }),
      bound: [
        { name: 'owner', from: 'claim:email' },
        {
          name: 'account',
          from: 'claim:account_id',
          check: (v) => z.coerce.number().int().min(1).parse(v),
        },
        { name: 'who', from: 'principal' },
      ],
      async handler(args, ctx) {
        seen.push(ctx.bound);
        return `rows of ${String(ctx.bound.owner)} (${args.limit ?? 10})`;
      },
    }),
  ],
});

const alice: Principal = {
  id: 'alice',
  authMethod: 'oauth',
  scopes: ['*'],
  claims: { email: 'alice@example.com', account_id: '42' },
};

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
  seen.length = 0;
});

async function connect(principal: Principal) {
  const harness = createTestHarness(loadConfig(baseConfigSchema, {}));
  const connection = await connectInMemory(
    harness.factory(definition, { principal: () => principal }),
  );
  open.push(connection);
  return { client: connection.client, records: harness.records };
}

const sha = (v: string) => `sha256:${createHash('sha256').update(v).digest('hex')}`;

describe('a bound parameter', () => {
  it('is not in the input schema, and reaches the handler from the principal, checked', async () => {
    const { client, records } = await connect(alice);
    const { tools } = await client.listTools();
    expect(Object.keys(tools[0]!.inputSchema.properties ?? {})).toEqual(['limit']);
    const result = await client.callTool({ name: 'demo_my_rows', arguments: { limit: 2 } });
    expect(resultText(result)).toBe('rows of alice@example.com (2)');
    expect(seen).toEqual([{ owner: 'alice@example.com', account: 42, who: 'alice' }]);
    // The record: the values' hashes by name, never the values.
    const record = records.find((r) => r.event.action === 'tools/call')!;
    expect(record.args?.bound).toEqual({
      account: sha('42'),
      owner: sha('alice@example.com'),
      who: sha('alice'),
    });
    expect(JSON.stringify(record)).not.toContain('alice@example.com');
    expectSchemaValid([record]);
  });

  it.each([
    ['as written', { owner: 'bob@example.com' }],
    ['in another case', { Owner: 'bob@example.com' }],
    ['in capitals', { OWNER: 'bob@example.com' }],
    ['with other separators', { 'Ac-Count': 7 }],
    ['in full-width letters', { ｏｗｎｅｒ: 'bob@example.com' }],
  ])('sent %s is refused by name, and nothing runs', async (_, args) => {
    const { client, records } = await connect(alice);
    const result = await client.callTool({ name: 'demo_my_rows', arguments: args });
    expect(result.isError).toBe(true);
    expect(resultText(result)).toMatch(
      /^Invalid arguments for demo_my_rows: (owner|account) is taken from the caller \(its (email|account_id) claim\) and cannot be given/,
    );
    expect(seen).toEqual([]);
    expect(records.at(-1)!.event.reason).toBe('invalid_params');
  });

  it('sent in _meta changes nothing: the value is still the caller’s', async () => {
    const { client } = await connect(alice);
    const result = await client.callTool({
      name: 'demo_my_rows',
      arguments: {},
      _meta: { owner: 'bob@example.com', bound: { owner: 'bob@example.com' } },
    });
    expect(resultText(result)).toBe('rows of alice@example.com (10)');
    expect(seen).toEqual([{ owner: 'alice@example.com', account: 42, who: 'alice' }]);
  });

  it.each([
    [
      'a missing claim',
      { email: 'alice@example.com' },
      'account_id claim (account), and this caller’s credential does not carry one',
    ],
    [
      'no claims at all',
      undefined,
      'email claim (owner), and this caller’s credential does not carry one',
    ],
    [
      'a claim that does not fit',
      { email: 'alice@example.com', account_id: 'forty-two' },
      'account_id claim (account), and this caller’s value does not fit the parameter',
    ],
    [
      'a claim on the prototype',
      JSON.parse('{"email":"a@example.com","__proto__":{"account_id":"1"}}') as Record<
        string,
        string
      >,
      'account_id claim (account)',
    ],
  ])(
    'refuses a caller with %s, before anything runs, never echoing a value',
    async (_, claims, said) => {
      const { client, records } = await connect({
        id: 'carol',
        authMethod: 'api_key',
        scopes: ['*'],
        ...(claims === undefined ? {} : { claims }),
      });
      const result = await client.callTool({ name: 'demo_my_rows', arguments: {} });
      expect(result.isError).toBe(true);
      expect(resultText(result).replaceAll("'", '’')).toContain(said);
      expect(resultText(result)).not.toContain('forty-two');
      expect(seen).toEqual([]);
      const record = records.at(-1)!;
      expect(record.event.reason).toBe('denied');
      expect(record.policy).toEqual({ decision: 'deny', rule: 'bound_parameter' });
    },
  );
});

describe('claims of a credential', () => {
  it('an API key carries the claims configured for it; a token its string claims only', async () => {
    const key = 'bound-test-key-0123456789abcdef';
    const config = loadConfig(baseConfigSchema, {
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_AUTH: 'api_key',
      GATEHOUSE_API_KEYS: JSON.stringify([
        {
          id: 'k1',
          sha256: createHash('sha256').update(key).digest('hex'),
          principal: 'portal',
          scopes: ['*'],
          claims: { customer_id: '17', email: 'ada@example.com' },
        },
      ]),
    });
    const auth = (await createAuthenticator(config, { scopes: [] }))!;
    const outcome = await auth.authenticate(`Bearer ${key}`);
    expect(outcome).toMatchObject({
      ok: true,
      principal: { id: 'portal', claims: { customer_id: '17', email: 'ada@example.com' } },
    });
  });

  it('a verified token carries its string claims; numbers, lists, objects, control characters and odd names stay out', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const config = loadConfig(baseConfigSchema, {
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_AUTH: 'oauth',
      GATEHOUSE_PUBLIC_URL: 'https://mcp.test/mcp',
      GATEHOUSE_OAUTH_ISSUER: 'https://issuer.test/',
      GATEHOUSE_OAUTH_PUBLIC_KEY: await exportSPKI(publicKey),
      GATEHOUSE_OAUTH_ALGORITHMS: 'ES256',
    });
    const token = await new SignJWT({
      email: 'alice@example.com',
      tenant: 'acme',
      level: 5,
      groups: ['admins', 'sales'],
      roles: ['reader', 7],
      org: { id: 'x' },
      'has space': 'x',
      bell: 'a\u0007b',
    })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('https://issuer.test/')
      .setAudience('https://mcp.test/mcp')
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(privateKey);
    const outcome = await (await createAuthenticator(config, { scopes: [] }))!.authenticate(
      `Bearer ${token}`,
    );
    expect(outcome.ok).toBe(true);
    const claims = (outcome as { principal: Principal }).principal.claims!;
    expect(claims).toMatchObject({ email: 'alice@example.com', tenant: 'acme', sub: 'alice' });
    for (const name of ['level', 'groups', 'org', 'has space', 'bell', 'exp'])
      expect(Object.hasOwn(claims, name), name).toBe(false);
    // Lists of strings are kept apart (a role map matches a group on them: ADR 0027); a list
    // holding anything else is left out whole.
    expect((outcome as { principal: Principal }).principal.claimLists).toEqual({
      groups: ['admins', 'sales'],
    });
  });

  it('refuses API key claims that are not strings or badly named, at start', () => {
    const keys = (claims: unknown) => ({
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_AUTH: 'api_key',
      GATEHOUSE_API_KEYS: JSON.stringify([
        { id: 'k1', sha256: 'a'.repeat(64), principal: 'p', scopes: [], claims },
      ]),
    });
    expect(() => loadConfig(baseConfigSchema, keys({ customer_id: 17 }))).toThrow(
      /GATEHOUSE_API_KEYS: 0\.claims\.customer_id/,
    );
    expect(() => loadConfig(baseConfigSchema, keys({ 'a b': 'x' }))).toThrow(
      /GATEHOUSE_API_KEYS: 0\.claims\.a b: Invalid key/,
    );
  });
});
