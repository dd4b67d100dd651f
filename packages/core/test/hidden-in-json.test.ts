import {
  READ_ONLY_ANNOTATIONS,
  baseConfigSchema,
  definePrompt,
  defineResource,
  defineServer,
  defineTool,
  loadConfig,
  sanitizeText,
} from '@gatehouse/core';
import type { Principal } from '@gatehouse/core';
import { createTestHarness } from '@gatehouse/core/testing';
import { connectInMemory } from '@gatehouse/testkit';
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitizeJsonText } from '../src/sanitize.ts';
import type { SanitizeFlag } from '../src/sanitize.ts';

// Hidden characters wherever a server's strings come from — code, a file, a catalog, a vendor —
// and however they are serialised. Roads found and tested here: a listing string (a tool's
// title, description and argument descriptions; a prompt's and its arguments'; a resource
// template's; the instructions), a resource's JSON text (where `\u001b` is six plain characters
// to a pass over the text and a raw ESC to a client that decodes it), an embedded JSON resource
// in a tool result, structured content, and object keys. The invariant, over every answer of the
// server: decoded (JSON texts parsed), no string holds a character the sanitiser removes.

/** What each hostile value carries: ESC, BEL, a lone CR, a bidi override, a tag character. */
const HOSTILE = 'ok\u001b[2Jgone\u0007\rover\u202eevil\u{e0041}';

/** Every string inside a value, JSON texts decoded (by their media type, or when they parse). */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    out.push(value);
    if (/^\s*[[{]/.test(value)) {
      try {
        strings(JSON.parse(value), out);
      } catch {
        // not JSON: the string itself was collected
      }
    }
  } else if (Array.isArray(value)) {
    for (const item of value) strings(item, out);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      out.push(key);
      strings(inner, out);
    }
  }
  return out;
}

/** A string the sanitiser would still change holds something hidden. */
function hidden(value: unknown): string[] {
  return strings(value).filter((s) => sanitizeText(s).text !== s);
}

const definition = defineServer({
  name: 'gatehouse-notes',
  version: '1.0.0',
  instructions: `Use the notes tools.${HOSTILE}`,
  tools: [
    // Made from a file, as a curated query is: its name says nothing of its scope.
    defineTool({
      name: 'my_notes',
      title: `My notes${HOSTILE}`,
      description: `The caller's notes.${HOSTILE}`,
      access: 'read',
      annotations: READ_ONLY_ANNOTATIONS,
      input: z.strictObject({ q: z.string().describe(`What to look for${HOSTILE}`) }),
      handler: async () => ({
        content: [
          { type: 'text', text: `found ${HOSTILE}` },
          {
            type: 'resource',
            resource: {
              uri: 'notes://n/1',
              mimeType: 'application/json',
              text: JSON.stringify({ title: HOSTILE, [`k${HOSTILE}`]: [HOSTILE] }, null, 2),
            },
          },
        ],
        structuredContent: { title: HOSTILE },
      }),
    }),
  ],
  resources: [
    defineResource({
      kind: 'template',
      name: 'note',
      uriTemplate: 'notes://n/{id}',
      title: `A note${HOSTILE}`,
      description: `One note as JSON${HOSTILE}`,
      mimeType: 'application/json',
      list: async () => [{ uri: 'notes://n/1', name: `note${HOSTILE}` }],
      read: async () => ({
        mimeType: 'application/json',
        text: JSON.stringify({ topic: HOSTILE, nested: { [HOSTILE]: [HOSTILE, 1] } }),
      }),
    }),
  ],
  prompts: [
    definePrompt({
      name: 'notes_digest',
      title: `Digest${HOSTILE}`,
      description: `A digest of notes${HOSTILE}`,
      arguments: { topic: { description: `The topic${HOSTILE}` } },
      handler: async () => [{ role: 'user', content: { type: 'text', text: `Digest ${HOSTILE}` } }],
    }),
  ],
});

describe('sanitizeJsonText', () => {
  it('cleans the values a JSON text holds, not only its characters, and keeps its indentation', () => {
    const flags = new Set<SanitizeFlag>();
    const text = JSON.stringify({ a: 'x\u001b[31my\u0007', b: ['\r\u202e'] }, null, 2);
    // The escaped controls are plain ASCII to a pass over the text…
    expect(sanitizeText(text).text).toContain('x\\u001b[31my\\u0007');
    // …and gone once decoded.
    const clean = sanitizeJsonText(text, flags);
    expect(JSON.parse(clean)).toEqual({ a: 'xy', b: ['\n'] });
    expect(clean).toBe(JSON.stringify({ a: 'xy', b: ['\n'] }, null, 2));
    expect([...flags].sort()).toEqual(['ansi', 'bidi', 'control']);
  });

  it('keeps a clean JSON text byte for byte, and treats what is not JSON as text', () => {
    const text = '{"a":  "b\\u00e9"}';
    expect(sanitizeJsonText(text, new Set())).toBe(text);
    expect(sanitizeJsonText('not json \u0007', new Set())).toBe('not json ');
  });
});

describe('every answer of a server whose strings carry hidden characters', () => {
  const principal: Principal = { id: 'p', authMethod: 'api_key', scopes: ['notes:read'] };
  let connection: Awaited<ReturnType<typeof connectInMemory>>;
  beforeAll(async () => {
    const config = loadConfig(baseConfigSchema, { GATEHOUSE_STRUCTURED_OUTPUT: 'true' });
    const harness = createTestHarness(config);
    connection = await connectInMemory(harness.factory(definition, { principal: () => principal }));
  });
  afterAll(async () => {
    await connection?.close();
  });

  it('holds none of them, decoded, in either view', async () => {
    const { client } = connection;
    const answers: unknown[] = [
      client.getInstructions(),
      await client.listTools(),
      await client.listPrompts(),
      await client.listResources(),
      await client.listResourceTemplates(),
      await client.readResource({ uri: 'notes://n/1' }),
      await client.getPrompt({ name: 'notes_digest', arguments: { topic: 'x' } }),
      await client.callTool({ name: 'my_notes', arguments: { q: 'x' } }),
    ];
    for (const answer of answers) expect(hidden(answer), JSON.stringify(answer)).toEqual([]);
    // The visible text survived, around what was removed.
    expect(JSON.stringify(answers)).toContain('okgone\\nover');
  });

  it("serves resources and prompts under the server's scope, not one made from a tool's name", async () => {
    const config = loadConfig(baseConfigSchema, {});
    const harness = createTestHarness(config);
    for (const [scopes, allowed] of [
      [['notes:read'], true],
      [['notes:*'], true],
      [['my:read'], false],
      [['other:read'], false],
    ] as const) {
      const who: Principal = { id: 'p', authMethod: 'api_key', scopes: [...scopes] };
      const c = await connectInMemory(harness.factory(definition, { principal: () => who }));
      try {
        expect((await c.client.listPrompts()).prompts.length > 0, scopes.join(',')).toBe(allowed);
        expect((await c.client.listResourceTemplates()).resourceTemplates.length > 0).toBe(allowed);
        const read = c.client.readResource({ uri: 'notes://n/1' });
        if (allowed) await expect(read).resolves.toBeDefined();
        else await expect(read).rejects.toThrow();
      } finally {
        await c.close();
      }
    }
  });
});
